import type { EntryPosition, IndexEntry } from '../../engine/index-entry';
import type { ShardListQuery } from '../../engine/index-query';
import type { ObjectStorage } from '../object-storage';
import { DELETED, IndexShardStore } from '../index-shard-store';
import type { IndexLiveFeed } from './index-live-feed';

/**
 * An index shard (`__index:<type>:<n>`): keeps the newest entry per instance
 * of its type. A read of a shard that was never written answers "empty"
 * without creating its tables.
 */
export class IndexShardRole {
	readonly kind = 'index';
	private store: IndexShardStore | undefined;

	constructor(
		private readonly storage: ObjectStorage,
		/** Dashboards watching this shard (see index-live-feed.ts). */
		readonly live?: IndexLiveFeed,
	) {}

	async write(entries: IndexEntry[]): Promise<void> {
		const shard = await this.writable();
		shard.write(entries);
		if (this.live?.watched) {
			// Only what the shard kept: a late, older delivery changed nothing and is not news.
			const kept = shard.versions(entries.map((e) => e.id));
			this.live.publish(entries.filter((e) => kept[e.id] === e.version));
		}
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
