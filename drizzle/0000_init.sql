CREATE TABLE `events` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`name` text NOT NULL,
	`payload` text,
	`received_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `events_name_seq` ON `events` (`name`,`seq`);--> statement-breakpoint
CREATE TABLE `index_entries` (
	`id` text PRIMARY KEY NOT NULL,
	`type` text NOT NULL,
	`status` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`version` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `index_entries_status_updated` ON `index_entries` (`status`,`updated_at`,`id`);--> statement-breakpoint
CREATE INDEX `index_entries_updated` ON `index_entries` (`updated_at`,`id`);--> statement-breakpoint
CREATE TABLE `instance` (
	`id` text PRIMARY KEY NOT NULL,
	`type` text NOT NULL,
	`status` text NOT NULL,
	`payload` text,
	`output` text,
	`error_name` text,
	`error_message` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`version` integer NOT NULL,
	`generation` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE `outbox` (
	`slot` integer PRIMARY KEY NOT NULL,
	`entry` text NOT NULL,
	`version` integer NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `steps` (
	`key` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`kind` text NOT NULL,
	`status` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`result` text,
	`error_name` text,
	`error_message` text,
	`started_at` integer,
	`finished_at` integer,
	`wake_at` integer,
	`seq` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `wakeups` (
	`key` text PRIMARY KEY NOT NULL,
	`at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `wakeups_at` ON `wakeups` (`at`);