import type { FinishedStatus } from '../../definition/registry';
import { FINISHED_STATUSES } from '../../support/statuses';
import type { InstancePart, PartKernel } from '../part';

/** A finished instance's retention (the type's `retention`): when it runs out, the instance deletes itself. */
export class Retention implements InstancePart {
	constructor(private readonly k: PartKernel) {}

	/** When this finished instance's retention runs out; undefined while it runs, is kept forever or is being deleted. */
	dueAt(): number | undefined {
		const k = this.k;
		const row = k.row;
		if (!row || k.deletion.pending || k.gone || !FINISHED_STATUSES.includes(row.status) || !k.host.registry.has(row.type)) return undefined;
		const keep = k.entryOf(row).retention[row.status as FinishedStatus];
		return keep === null ? undefined : row.updatedAt + keep;
	}

	/** Retention ran out: the instance deletes itself, archived first when an archive is configured. */
	onAlarm(now: number): boolean {
		const at = this.dueAt();
		if (at === undefined || at > now) return false;
		const k = this.k;
		const { retention } = k.entryOf(k.row!);
		k.deletion.begin('retention', retention.archive && k.host.archive !== undefined);
		k.host.background(k.deletion.continue());
		return true;
	}
}
