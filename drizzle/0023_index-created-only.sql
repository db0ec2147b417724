-- No index leads with updated_at any more: every delivery moves an entry's updated_at, so
-- `(status, updated_at, id)` was a row written per delivery (docs/decisions.md "One listing index
-- per shard"). Its queries are bounded by created_at (created_at <= updated_at) on the index left.
DROP INDEX `index_entries_status_updated`;