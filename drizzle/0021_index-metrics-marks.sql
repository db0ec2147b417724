ALTER TABLE `index_entries` ADD `pending_metrics` text;--> statement-breakpoint
ALTER TABLE `index_metric_minutes` ADD `rolled_to` integer;