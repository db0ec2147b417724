CREATE INDEX `index_entries_status_created` ON `index_entries` (`status`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `index_entries_created` ON `index_entries` (`created_at`,`id`);