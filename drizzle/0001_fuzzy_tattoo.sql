ALTER TABLE `instance` ADD `error_stack` text;--> statement-breakpoint
ALTER TABLE `steps` ADD `error_stack` text;