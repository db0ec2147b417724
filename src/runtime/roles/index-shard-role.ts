import type { EntryPosition, IndexEntry } from '../../engine/index-entry';
import type { ShardListQuery } from '../../engine/index-query';
import type { ObjectStorage } from '../object-storage';
import { DELETED, IndexShardStore } from '../index-shard-store';

/**
 * An index shard (`__index:<type>:<n>`): keeps the newest entry per instance
 * of its type. A read of a shard that was never written answers "empty"
 * without creating its tables.
 */
export class IndexShardRole {
	readonly kind = 'index';
	private store: IndexShardStore | undefined;

	constructor(private readonly storage: ObjectStorage) {}

	async write(entries: IndexEntry[]): Promise<void> {
		(await this.writable()).write(entries);
	}

	async tombstone(items: EntryPosition[]): Promise<void> {
		(await this.writable()).tombstone(items);
	}

	/** Deleted instances: their entries become deletion tombstones. */
	async remove(items: EntryPosition[]): Promise<void> {
		(await this.writable()).tombstone(items, DELETED);
	}

	list(query: ShardListQuery): IndexEntry[] {
		return this.read((shard) => shard.list(query), []);
	}

	counts(): Record<string, number> {
		return this.read((shard) => shard.counts(), {});
	}

	versions(ids: string[]): Record<string, number> {
		return this.read((shard) => shard.versions(ids), {});
	}

	scan(afterId: string, limit: number): IndexEntry[] {
		return this.read((shard) => shard.scan(afterId, limit), []);
	}

	private read<T>(read: (shard: IndexShardStore) => T, empty: T): T {
		return this.storage.hasSchema ? read(this.shard()) : empty;
	}

	private async writable(): Promise<IndexShardStore> {
		await this.storage.ensureSchema();
		return this.shard();
	}

	private shard(): IndexShardStore {
		return (this.store ??= new IndexShardStore(this.storage.db, this.storage.storage));
	}
}
