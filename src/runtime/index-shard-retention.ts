import { callOperation, type ShardflowEnv } from '../client/instance-client';
import type { FinishedStatus, ResolvedRetention } from '../engine/definition/registry';
import { FINISHED_STATUSES } from '../engine/support/statuses';
import type { IndexEntry } from '../engine/index/index-entry';
import { expiresAt, nextExpiry, slotEnd, sweepRetryMs } from '../engine/lifecycle/retention-sweep';
import { logFormOf, printLog } from '../engine/support/engine-log';
import { ErrorCode, ShardflowError } from '../engine/support/errors';
import { describeThrown } from '../engine/support/thrown-value';
import { DELETED, type IndexShardStore } from './index-shard-store';
import type { ShardAlarm } from './shard-alarm';

/** Entries of one status asked per alarm; more wait for the next alarm, set at once. */
const SWEEP_BATCH = 100;
/** Instances asked at once. */
const CONCURRENCY = 10;

export interface ShardRetentionHost {
	env: ShardflowEnv;
	/** The shard's one alarm, shared with its other duties. */
	alarm: ShardAlarm;
	/** The shard's type's retention (undefined: the type is not in this build's registry, so nothing is expired). */
	retention: ResolvedRetention | undefined;
	now(): number;
}

/**
 * The index shard's retention duty (docs/decisions.md "Retention owned by the index shard"): it
 * holds every finished entry of its instances with its status and time, so one alarm of its own,
 * set for the slot in which the earliest retention runs out (engine/index/retention-sweep.ts), asks
 * each instance whose retention ran out to delete itself. The instance checks its own retention and
 * deletes itself as its own alarm would (archived first, the removal delivered here before its
 * storage goes), so the entry leaves the shard only once the instance has done it; the shard writes
 * nothing for an expiry but its alarm. Instances of the table layout keep their own alarm too; asking
 * them is harmless (whoever comes first deletes, the other finds it gone).
 */
export class ShardRetention {
	constructor(private readonly host: ShardRetentionHost) {}

	/**
	 * After a write: makes sure the alarm fires by the slot of the finished entries it carried. An
	 * alarm already due by then is left as is (most runs: one alarm write per slot, not per run).
	 * A shard without an alarm (new, or one a build without this duty consumed after a rollback)
	 * arms for everything it holds.
	 */
	async afterWrite(shard: IndexShardStore, entries: readonly IndexEntry[]): Promise<void> {
		const retention = this.host.retention;
		if (!retention) return;
		let at: number | undefined;
		for (const e of entries) {
			const due = expiresAt(retention, e.status, e.updatedAt);
			if (due === undefined) continue;
			const slot = slotEnd(due, retention[e.status as FinishedStatus]!);
			if (at === undefined || slot < at) at = slot;
		}
		if (at === undefined) return;
		if ((await this.host.alarm.current()) === null) at = Math.min(at, this.nextDue(shard) ?? at);
		await this.host.alarm.ensureBy(at);
	}

	/**
	 * Asks every instance whose retention ran out by now to delete itself; answers when the duty is
	 * next due (undefined: no finished entry with a retention), for the role to ask the shard's alarm for.
	 */
	async sweep(shard: IndexShardStore): Promise<number | undefined> {
		const retention = this.host.retention;
		if (!retention) return undefined;
		const now = this.host.now();
		let more = false;
		let shortest: number | undefined;
		for (const status of FINISHED_STATUSES as readonly FinishedStatus[]) {
			const keep = retention[status];
			if (keep === null) continue;
			shortest = shortest === undefined ? keep : Math.min(shortest, keep);
			const due = shard.updatedBy(status, now - keep, SWEEP_BATCH);
			if (due.length === SWEEP_BATCH) more = true;
			for (let i = 0; i < due.length; i += CONCURRENCY) await Promise.all(due.slice(i, i + CONCURRENCY).map((entry) => this.expire(shard, entry, status)));
		}
		if (shortest === undefined) return undefined;
		if (more) return now;
		const next = this.nextDue(shard);
		// Entries still due did not go (an instance that did not answer, that is still deleting, or
		// that the index shows finished while it is not): asked again after a while, not at once.
		return next !== undefined && next <= now ? now + sweepRetryMs(shortest) : next;
	}

	private nextDue(shard: IndexShardStore): number | undefined {
		const retention = this.host.retention;
		if (!retention) return undefined;
		const oldest: Partial<Record<FinishedStatus, number>> = {};
		for (const status of FINISHED_STATUSES as readonly FinishedStatus[]) {
			if (retention[status] === null) continue;
			const at = shard.oldestUpdated(status);
			if (at !== undefined) oldest[status] = at;
		}
		return nextExpiry(retention, oldest);
	}

	/**
	 * Asks one instance to delete itself for its retention, naming the incarnation listed. An instance
	 * that answers NOT_FOUND is gone, or is being deleted (its removal, durable, comes here by itself):
	 * its entry becomes a deletion tombstone at the listed position, which a newer entry still replaces.
	 */
	private async expire(shard: IndexShardStore, entry: IndexEntry, status: FinishedStatus): Promise<void> {
		try {
			await callOperation(this.host.env, 'delete', { id: entry.id, reason: 'retention', only: { status: [status], createdBefore: entry.createdAt + 1 } });
		} catch (error) {
			if (error instanceof ShardflowError && error.code === ErrorCode.NotFound) {
				shard.tombstone([{ id: entry.id, version: entry.version, createdAt: entry.createdAt }], DELETED, this.host.now());
				return;
			}
			printLog({ severity: 'warn', event: 'index.expiry_failed', instanceId: entry.id, type: entry.type, error: describeThrown(error) }, logFormOf(this.host.env));
		}
	}
}
