CREATE TABLE `event_keys` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`key` text NOT NULL,
	`name` text NOT NULL,
	`digest` text NOT NULL,
	`at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `event_keys_key` ON `event_keys` (`key`);--> statement-breakpoint
ALTER TABLE `events` ADD `bytes` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `instance` ADD `dropped_events` integer DEFAULT 0 NOT NULL;