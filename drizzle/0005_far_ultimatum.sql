ALTER TABLE `index_entries` ADD `parent_id` text;--> statement-breakpoint
CREATE INDEX `index_entries_parent_created` ON `index_entries` (`parent_id`,`created_at`,`id`);--> statement-breakpoint
ALTER TABLE `instance` ADD `parent_id` text;