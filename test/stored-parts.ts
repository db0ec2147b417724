import { KV } from '../src/runtime/compact-keys';

/**
 * What an object stores, named as the table layout names it: its tables (but the runtime's own), and for
 * a compact instance (runtime/compact-instance-store.ts) its key-value parts under the names of the
 * tables they stand for, so a test of what an instance keeps reads the same in either layout.
 */
const COMPACT_PARTS: [prefix: string, table: string][] = [
	[KV.instance, 'instance'],
	[KV.outbox, 'outbox'],
	[KV.step, 'steps'],
	[KV.history, 'history'],
	[KV.wakeup, 'wakeups'],
	[KV.event, 'events'],
	[KV.eventKey, 'event_keys'],
	[KV.dropped, 'dropped_events'],
	[KV.deletion, 'deletion'],
	[KV.slot, 'concurrency_slot'],
	[KV.inline, 'inline_children'],
];

export function storedParts(storage: DurableObjectStorage): string[] {
	const tables = [...storage.sql.exec<{ name: string }>(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '_cf_%' AND name NOT LIKE 'sqlite_%'`)].map((r) => r.name);
	const parts = new Set<string>();
	for (const [key] of storage.kv.list()) {
		const part = COMPACT_PARTS.find(([prefix]) => (prefix.endsWith(':') ? key.startsWith(prefix) : key === prefix));
		if (part) parts.add(part[1]);
	}
	return [...tables, ...parts];
}

/** Rows of one table, or keys of the compact part standing for it. */
export function storedCount(storage: DurableObjectStorage, table: string): number {
	const tables = new Set([...storage.sql.exec<{ name: string }>(`SELECT name FROM sqlite_master WHERE type = 'table'`)].map((t) => t.name));
	if (tables.has(table)) return Number([...storage.sql.exec<{ n: number }>(`SELECT count(*) AS n FROM ${table}`)][0]!.n);
	const part = COMPACT_PARTS.find(([, name]) => name === table);
	if (!part) return 0;
	return part[0].endsWith(':') ? [...storage.kv.list({ prefix: part[0] })].length : storage.kv.get(part[0]) === undefined ? 0 : 1;
}

export function hasTable(storage: DurableObjectStorage, table: string): boolean {
	return [...storage.sql.exec(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?`, table)].length > 0;
}
