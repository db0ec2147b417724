import { reportInvalidSetting } from './invalid-setting';

/**
 * How a new workflow instance keeps its storage (docs/decisions.md "The compact instance layout"):
 * - `table`: the SQLite tables of drizzle/ (a new object writes their schema: 12 rows);
 * - `compact`: the object's key-value storage, no schema (runtime/compact-instance-store.ts).
 * Only new instances take the setting: an existing object keeps the layout it has, learnt from what it
 * holds (runtime/object-storage.ts), so a deploy that changes it leaves every instance running.
 */
export type StorageLayout = 'table' | 'compact';

/**
 * `SHARDFLOW_STORAGE_LAYOUT` (an older switch; set, it wins over the storage format's level,
 * runtime/storage-format.ts): "compact" or "table". A build before the compact layout cannot read a
 * compact instance, so a deployment that may still roll back to one keeps "table" (storage format 2 or
 * lower); a new project (the starter) writes compact (format 4). A malformed value is logged and "table" used.
 */
export function storageLayoutOf(env: { SHARDFLOW_STORAGE_LAYOUT?: unknown }): StorageLayout {
	const value = env.SHARDFLOW_STORAGE_LAYOUT;
	if (value === undefined || value === '' || value === 'table') return 'table';
	if (value === 'compact') return 'compact';
	reportInvalidSetting(env, 'SHARDFLOW_STORAGE_LAYOUT', value, `SHARDFLOW_STORAGE_LAYOUT must be "compact" or "table", got ${JSON.stringify(value)}; new instances use the table layout`);
	return 'table';
}
