CREATE TABLE `inline_children` (
	`child_id` text NOT NULL,
	`key` text NOT NULL,
	`body` text NOT NULL,
	`result` text,
	`publish_at` integer,
	PRIMARY KEY(`child_id`, `key`)
);
