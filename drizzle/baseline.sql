-- The schema drizzle/0000..0023_index-created-only leave behind, as one script for new objects (scripts/schema-baseline.mjs).
-- Generated: do not edit. `npm run db:baseline` rewrites it; the line below says which migrations it stands for.
-- up-to: 1796615413575
CREATE TABLE `events` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`name` text NOT NULL,
	`payload` text,
	`received_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `events_name_seq` ON `events` (`name`,`seq`);
--> statement-breakpoint
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
, `error_stack` text, `error_code` text, `code_version` text, `last_code_version` text, `rollback` text, `history_bytes` integer DEFAULT 0 NOT NULL, `history_seq` integer DEFAULT 0 NOT NULL, `parent_id` text, `attributes` text, `pending` text);
--> statement-breakpoint
CREATE TABLE `outbox` (
	`slot` integer PRIMARY KEY NOT NULL,
	`entry` text NOT NULL,
	`version` integer NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` integer NOT NULL
, `backlogged_since` integer);
--> statement-breakpoint
CREATE TABLE `wakeups` (
	`key` text PRIMARY KEY NOT NULL,
	`at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `wakeups_at` ON `wakeups` (`at`);
--> statement-breakpoint
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
CREATE UNIQUE INDEX `event_keys_key` ON `event_keys` (`key`);
--> statement-breakpoint
CREATE TABLE `index_backlog` (
	`id` text PRIMARY KEY NOT NULL,
	`since` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `index_backlog_since` ON `index_backlog` (`since`,`id`);
--> statement-breakpoint
CREATE TABLE `history` (
	`seq` integer PRIMARY KEY NOT NULL,
	`generation` integer NOT NULL,
	`at` integer NOT NULL,
	`kind` text NOT NULL,
	`step` text,
	`attempt` integer,
	`value` text,
	`detail` text
);
--> statement-breakpoint
CREATE TABLE `deletion` (
	`slot` integer PRIMARY KEY NOT NULL,
	`requested_at` integer NOT NULL,
	`reason` text NOT NULL,
	`archive` integer NOT NULL,
	`archived_key` text,
	`attempts` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` integer
);
--> statement-breakpoint
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
CREATE INDEX `limiter_slots_state_seq` ON `limiter_slots` (`state`,`seq`);
--> statement-breakpoint
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
CREATE TABLE `index_metric_durations` (
	`minute` integer NOT NULL,
	`bucket` integer NOT NULL,
	`runs` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`minute`, `bucket`)
);
--> statement-breakpoint
CREATE TABLE `index_metric_minutes` (
	`minute` integer PRIMARY KEY NOT NULL,
	`started` integer DEFAULT 0 NOT NULL,
	`completed` integer DEFAULT 0 NOT NULL,
	`errored` integer DEFAULT 0 NOT NULL,
	`terminated` integer DEFAULT 0 NOT NULL
, `durations` text, `rolled_to` integer);
--> statement-breakpoint
CREATE TABLE `index_attributes` (
	`entry_id` text NOT NULL,
	`name` text NOT NULL,
	`value` blob NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`entry_id`, `name`)
);
--> statement-breakpoint
CREATE INDEX `index_attributes_value` ON `index_attributes` (`name`,`value`,`created_at`,`entry_id`);
--> statement-breakpoint
CREATE TABLE `bulk_counts` (
	`counter` text PRIMARY KEY NOT NULL,
	`n` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `bulk_items` (
	`id` text PRIMARY KEY NOT NULL,
	`state` text NOT NULL,
	`reason` text,
	`version` integer
);
--> statement-breakpoint
CREATE TABLE `bulk_job` (
	`slot` integer PRIMARY KEY NOT NULL,
	`spec` text NOT NULL,
	`state` text NOT NULL,
	`cursor` text,
	`errors` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`finished_at` integer
);
--> statement-breakpoint
CREATE TABLE "steps" (
	`seq` integer PRIMARY KEY NOT NULL,
	`key` text NOT NULL,
	`name` text NOT NULL,
	`kind` text NOT NULL,
	`status` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`record_seq` integer,
	`record_count` integer,
	`record_generation` integer,
	`started_at` integer,
	`finished_at` integer,
	`wake_at` integer,
	`sensitive` integer,
	`result` text,
	`error_name` text,
	`error_message` text,
	`error_stack` text,
	`error_code` text
);
--> statement-breakpoint
CREATE TABLE `inline_children` (
	`child_id` text NOT NULL,
	`key` text NOT NULL,
	`body` text NOT NULL,
	`result` text,
	`publish_at` integer,
	PRIMARY KEY(`child_id`, `key`)
);
--> statement-breakpoint
CREATE TABLE "index_entries" (
	`id` text PRIMARY KEY NOT NULL,
	`type` text NOT NULL,
	`status` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`version` integer NOT NULL,
	`code_version` text,
	`parent_id` text,
	`attributes` text
, `pending_metrics` text, `generation` integer DEFAULT 0 NOT NULL) WITHOUT ROWID;
--> statement-breakpoint
CREATE INDEX `index_entries_status_created` ON `index_entries` (`status`,`created_at`,`id`);
--> statement-breakpoint
CREATE INDEX `index_entries_parent_created` ON `index_entries` (`parent_id`,`created_at`,`id`) WHERE "index_entries"."parent_id" IS NOT NULL;
