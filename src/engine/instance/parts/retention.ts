import type { FinishedStatus } from '../../definition/registry';
import { FINISHED_STATUSES } from '../../support/statuses';
import type { InstancePart, PartKernel } from '../part';

/**
 * A finished instance's retention (the type's `retention`): when it runs out, the instance deletes
 * itself, archived first when an archive is configured. Who notices it ran out depends on the store:
 * the instance's own alarm (table layout), or its index shard's sweep (`expiredByIndex`: the compact
 * layout; docs/decisions.md "Retention owned by the index shard"), which saves an alarm write per run.
 */
export class Retention implements InstancePart {
	constructor(private readonly k: PartKernel) {}

	/** The index shard, not this instance's alarm, notices when the retention runs out. */
	get byIndex(): boolean {
		return this.k.host.store.expiredByIndex === true;
	}

	/** When this finished instance's retention runs out; undefined while it runs, is kept forever or is being deleted. */
	expiresAt(): number | undefined {
		const k = this.k;
		const row = k.row;
		if (!row || k.deletion.pending || k.gone || !FINISHED_STATUSES.includes(row.status) || !k.host.registry.has(row.type)) return undefined;
		const keep = k.entryOf(row).retention[row.status as FinishedStatus];
		return keep === null ? undefined : row.updatedAt + keep;
	}

	/** When the alarm must fire for the retention: never when the shard runs it. */
	dueAt(): number | undefined {
		return this.byIndex ? undefined : this.expiresAt();
	}

	/**
	 * A finished instance whose shard runs its retention leaves whatever alarm it has (the backstop
	 * set at create) to fire once and find nothing, rather than delete it: an alarm invocation is a
	 * request ($0.15 per million), a `deleteAlarm` possibly a row written ($1 per million).
	 */
	get leavesAlarm(): boolean {
		const row = this.k.row;
		return this.byIndex && row !== undefined && FINISHED_STATUSES.includes(row.status) && !this.k.deletion.pending;
	}

	/**
	 * Retention ran out: the instance deletes itself. An alarm set for it by a build before the shard ran
	 * retention (or by the table layout) still does it, whoever owns it now.
	 */
	onAlarm(now: number): boolean {
		if (!this.expire(now)) return false;
		this.k.host.background(this.k.deletion.continue());
		return true;
	}

	/** Begins the deletion if the retention has run out by `now` (durable: see parts/deletion.ts); false if it has not. */
	expire(now: number): boolean {
		const at = this.expiresAt();
		if (at === undefined || at > now) return false;
		const k = this.k;
		const { retention } = k.entryOf(k.row!);
		k.deletion.begin('retention', retention.archive && k.host.archive !== undefined);
		return true;
	}
}
