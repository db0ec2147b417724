CREATE TABLE `engine_keys` (
	`name` text PRIMARY KEY NOT NULL,
	`secret` text NOT NULL
);
