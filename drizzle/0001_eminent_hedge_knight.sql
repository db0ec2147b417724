CREATE TABLE `dropped_events` (
	`slot` integer PRIMARY KEY NOT NULL,
	`count` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `engine_keys` (
	`name` text PRIMARY KEY NOT NULL,
	`secret` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `event_keys` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`key` text NOT NULL,
	`name` text NOT NULL,
	`digest` text NOT NULL,
	`at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `event_keys_key` ON `event_keys` (`key`);--> statement-breakpoint
CREATE TABLE `index_backlog` (
	`id` text PRIMARY KEY NOT NULL,
	`since` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `index_backlog_since` ON `index_backlog` (`since`,`id`);--> statement-breakpoint
ALTER TABLE `instance` ADD `error_stack` text;--> statement-breakpoint
ALTER TABLE `instance` ADD `error_code` text;--> statement-breakpoint
ALTER TABLE `outbox` ADD `backlogged_since` integer;--> statement-breakpoint
ALTER TABLE `steps` ADD `error_stack` text;--> statement-breakpoint
ALTER TABLE `steps` ADD `error_code` text;--> statement-breakpoint
CREATE INDEX `steps_seq` ON `steps` (`seq`);--> statement-breakpoint
CREATE INDEX `index_entries_status_created` ON `index_entries` (`status`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `index_entries_created` ON `index_entries` (`created_at`,`id`);