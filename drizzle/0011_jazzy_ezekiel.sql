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
