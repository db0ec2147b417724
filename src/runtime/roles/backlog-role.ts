import type { BacklogAccess } from '../../operations/role-calls';
import type { BacklogSummary } from '../../engine/index/index-backlog';
import { IndexBacklogStore } from '../index-backlog-store';
import type { ObjectStorage } from '../object-storage';

/**
 * A type's delivery backlog (`__backlog:<type>`): the instances whose index
 * delivery is failing, registered by those instances themselves.
 */
export class BacklogRole implements BacklogAccess {
	readonly kind = 'backlog';
	private store: IndexBacklogStore | undefined;

	constructor(private readonly storage: ObjectStorage) {}

	async add(id: string, since: number): Promise<void> {
		(await this.writable()).add(id, since);
	}

	async remove(id: string): Promise<void> {
		(await this.writable()).remove(id);
	}

	/** A backlog never written has nothing pending, and reading it creates no tables. */
	summary(): BacklogSummary {
		return this.storage.hasSchema ? this.backlog().summary() : { pending: 0, oldestSince: null, oldest: [] };
	}

	private async writable(): Promise<IndexBacklogStore> {
		await this.storage.ensureSchema();
		return this.backlog();
	}

	private backlog(): IndexBacklogStore {
		return (this.store ??= new IndexBacklogStore(this.storage.db));
	}
}
