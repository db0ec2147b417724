CREATE TABLE `concurrency_slot` (
	`slot` integer PRIMARY KEY NOT NULL,
	`key` text NOT NULL,
	`state` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` integer
);
--> statement-breakpoint
CREATE TABLE `limiter_slots` (
	`id` text PRIMARY KEY NOT NULL,
	`seq` integer NOT NULL,
	`state` text NOT NULL,
	`requested_at` integer NOT NULL,
	`granted_at` integer,
	`notify_attempts` integer DEFAULT 0 NOT NULL,
	`notify_at` integer
);
--> statement-breakpoint
CREATE INDEX `limiter_slots_state_seq` ON `limiter_slots` (`state`,`seq`);--> statement-breakpoint
CREATE TABLE `schedule_runs` (
	`tick` integer PRIMARY KEY NOT NULL,
	`at` integer NOT NULL,
	`outcome` text NOT NULL,
	`instance_id` text,
	`missed` integer DEFAULT 0 NOT NULL,
	`error` text
);
--> statement-breakpoint
CREATE TABLE `schedule_state` (
	`type` text PRIMARY KEY NOT NULL,
	`cron` text NOT NULL,
	`paused` integer NOT NULL,
	`next_at` integer,
	`last_tick_at` integer,
	`last_instance_id` text,
	`pending_tick` integer,
	`pending_missed` integer DEFAULT 0 NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE `index_entries` ADD `parent_id` text;--> statement-breakpoint
CREATE INDEX `index_entries_parent_created` ON `index_entries` (`parent_id`,`created_at`,`id`);--> statement-breakpoint
ALTER TABLE `instance` ADD `rollback` text;--> statement-breakpoint
ALTER TABLE `instance` ADD `history_bytes` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `instance` ADD `history_seq` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `instance` ADD `parent_id` text;