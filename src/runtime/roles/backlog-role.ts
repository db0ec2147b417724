import type { BacklogAccess } from '../../operations/role-calls';
import type { BacklogSummary } from '../../engine/index/index-backlog';
import { IndexBacklogStore } from '../index-backlog-store';
import type { ObjectStorage } from '../object-storage';
import { FailingPassesStore } from '../failing-passes-store';
import type { FailingReport, FailingSummary } from '../../engine/instance/failing-passes';

/**
 * A type's delivery backlog (`__backlog:<type>`): the instances whose index
 * delivery is failing, registered by those instances themselves; and beside it the
 * instances whose passes keep failing (failing-passes-store.ts), reported the same way.
 */
export class BacklogRole implements BacklogAccess {
	readonly kind = 'backlog';
	private store: IndexBacklogStore | undefined;
	private failingPasses: FailingPassesStore | undefined;

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

	/** An instance whose passes failed `report.count` times in a row (engine/instance/failing-passes.ts). */
	reportFailing(report: FailingReport): void {
		this.failingStore().report(report);
	}

	withdrawFailing(id: string): void {
		this.failingStore().withdraw(id);
	}

	failing(now: number): FailingSummary {
		return this.failingStore().summary(now);
	}

	private failingStore(): FailingPassesStore {
		return (this.failingPasses ??= new FailingPassesStore(this.storage.storage.kv));
	}

	private async writable(): Promise<IndexBacklogStore> {
		await this.storage.ensureSchema();
		return this.backlog();
	}

	private backlog(): IndexBacklogStore {
		return (this.store ??= new IndexBacklogStore(this.storage.db));
	}
}
