-- Hand-written (drizzle-kit cannot say WITHOUT ROWID): index_entries becomes a table keyed by its id
-- alone, so a new entry no longer writes an entry of the id's implicit unique index (a row written:
-- docs/decisions.md "An index entry without its id index"). The table is rebuilt, its indexes with it.
CREATE TABLE `__new_index_entries` (
	`id` text PRIMARY KEY NOT NULL,
	`type` text NOT NULL,
	`status` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`version` integer NOT NULL,
	`code_version` text,
	`parent_id` text,
	`attributes` text
) WITHOUT ROWID;
--> statement-breakpoint
INSERT INTO `__new_index_entries`(`id`, `type`, `status`, `created_at`, `updated_at`, `version`, `code_version`, `parent_id`, `attributes`) SELECT `id`, `type`, `status`, `created_at`, `updated_at`, `version`, `code_version`, `parent_id`, `attributes` FROM `index_entries` ORDER BY `id`;
--> statement-breakpoint
DROP TABLE `index_entries`;
--> statement-breakpoint
ALTER TABLE `__new_index_entries` RENAME TO `index_entries`;
--> statement-breakpoint
CREATE INDEX `index_entries_status_created` ON `index_entries` (`status`,`created_at`,`id`);
--> statement-breakpoint
CREATE INDEX `index_entries_status_updated` ON `index_entries` (`status`,`updated_at`,`id`);
--> statement-breakpoint
CREATE INDEX `index_entries_parent_created` ON `index_entries` (`parent_id`,`created_at`,`id`) WHERE "index_entries"."parent_id" IS NOT NULL;
