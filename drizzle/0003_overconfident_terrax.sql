CREATE TABLE `deletion` (
	`slot` integer PRIMARY KEY NOT NULL,
	`requested_at` integer NOT NULL,
	`reason` text NOT NULL,
	`archive` integer NOT NULL,
	`archived_key` text,
	`attempts` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` integer
);
