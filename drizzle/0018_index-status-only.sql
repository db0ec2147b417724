DROP INDEX `index_entries_created`;--> statement-breakpoint
DROP INDEX `index_entries_updated`;