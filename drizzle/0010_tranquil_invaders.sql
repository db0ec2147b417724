CREATE TABLE `index_attributes` (
	`entry_id` text NOT NULL,
	`name` text NOT NULL,
	`value` blob NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`entry_id`, `name`)
);
--> statement-breakpoint
CREATE INDEX `index_attributes_value` ON `index_attributes` (`name`,`value`,`created_at`,`entry_id`);--> statement-breakpoint
ALTER TABLE `index_entries` ADD `attributes` text;--> statement-breakpoint
ALTER TABLE `instance` ADD `attributes` text;