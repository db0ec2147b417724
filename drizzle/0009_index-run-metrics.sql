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
);
