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
