ALTER TABLE `instance` ADD `history_bytes` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `instance` ADD `history_seq` integer DEFAULT 0 NOT NULL;