-- A step's rows in two b-trees, not three, and its started/completed records in its row
-- (docs/decisions.md "A step's records in its row"): `steps` is rebuilt with `seq` as its rowid
-- and a unique index on `key` (the text primary key's autoindex and the `steps_seq` index were
-- two index entries per insert), without the `record` column, and dropping it drops the
-- `steps_record_*` triggers of drizzle/0012. The rows copied keep their records in `history`
-- (the triggers wrote them there): `record_seq` null says so. No foreign key refers to `steps`.
CREATE TABLE `__new_steps` (
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
-- Seqs are kept; were two rows to share one (the engine gives each new step the next), all
-- would be renumbered in their order (seq, then insertion), since `seq` is now unique.
INSERT INTO `__new_steps`("seq", "key", "name", "kind", "status", "attempts", "started_at", "finished_at", "wake_at", "sensitive", "result", "error_name", "error_message", "error_stack", "error_code") SELECT "seq" + (ROW_NUMBER() OVER (ORDER BY "seq", rowid) - 1) * (SELECT count(*) > count(DISTINCT "seq") FROM `steps`), "key", "name", "kind", "status", "attempts", "started_at", "finished_at", "wake_at", "sensitive", "result", "error_name", "error_message", "error_stack", "error_code" FROM `steps` ORDER BY "seq", rowid;--> statement-breakpoint
DROP TABLE `steps`;--> statement-breakpoint
ALTER TABLE `__new_steps` RENAME TO `steps`;--> statement-breakpoint
CREATE UNIQUE INDEX `steps_key` ON `steps` (`key`);
