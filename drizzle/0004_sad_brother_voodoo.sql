ALTER TABLE `index_entries` ADD `code_version` text;--> statement-breakpoint
ALTER TABLE `instance` ADD `code_version` text;--> statement-breakpoint
ALTER TABLE `instance` ADD `last_code_version` text;