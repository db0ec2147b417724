import type { NewHistoryRow } from '../engine/history/history';
import type { InstanceRow } from '../engine/storage/store';
import type { WriteGate, WriteMethod } from './write-gate';

/**
 * One durable write as a crash sees it: every store write made in one
 * synchronous turn. Durable Object storage commits writes with no await
 * between them together (the engine relies on it: a step's row and its
 * history record), so a crash falls between groups, never inside one.
 */
export interface WriteGroup {
	/** 1 for the run's first durable write. */
	index: number;
	/** What it wrote, in order: history records (`step.completed "charge"`), status changes, other store calls. */
	writes: string[];
	/** Store calls that go with a record saying more (step rows, wake-ups, the outbox row), named only when nothing else is. */
	bookkeeping: string[];
}

/** Where one exploration run kills the isolate. */
export interface CrashPlan {
	group: number;
	/** `before`: the group never commits; `after`: it commits, and nothing after it runs. */
	when: 'before' | 'after';
}

/**
 * Numbers the durable writes of a run (a `WriteGate` that admits every write)
 * and, given a plan, calls `crash` just before or just after the planned one.
 * "Just after" ends when the turn ends or when a step function is about to
 * start, whichever comes first: a step's function runs in the same turn as
 * its `step.started` write, but the output gate holds its first outgoing call
 * until that write is durable, so a crash can fall between them.
 */
export class WriteGroupCounter implements WriteGate {
	readonly groups: WriteGroup[] = [];
	private open: WriteGroup | undefined;

	constructor(
		private readonly plan: CrashPlan | undefined,
		private readonly crash: () => void,
	) {}

	admit(method: WriteMethod, args: readonly unknown[]): boolean {
		if (!this.open) {
			const index = this.groups.length + 1;
			if (this.plan?.when === 'before' && this.plan.group === index) {
				this.crash();
				return false;
			}
			const group: WriteGroup = { index, writes: [], bookkeeping: [] };
			this.open = group;
			this.groups.push(group);
			queueMicrotask(() => {
				this.open = undefined;
				if (this.plan?.when === 'after' && this.plan.group === group.index) this.crash();
			});
		}
		const descriptions = describeWrite(method, args);
		const list = descriptions.length === 0 ? this.open.bookkeeping : this.open.writes;
		for (const entry of descriptions.length === 0 ? [method] : descriptions) if (!list.includes(entry)) list.push(entry);
		return true;
	}

	/** A step function is about to start: a planned "after" crash of the open group happens now. */
	beforeStepFunction(): void {
		if (this.open && this.plan?.when === 'after' && this.plan.group === this.open.index) this.crash();
	}
}

function describeWrite(method: WriteMethod, args: readonly unknown[]): string[] {
	if (method === 'appendHistory' || method === 'writeStepWithRecord') return [describeRecord(args[method === 'appendHistory' ? 0 : 1] as NewHistoryRow)];
	if (method === 'insertStep') return (args[1] as readonly NewHistoryRow[]).map(describeRecord);
	if (method === 'writeInstance') return [`status ${(args[0] as InstanceRow).status}`];
	// Step rows, wake-ups, buffered events and the outbox row go with a record that says more.
	return [];
}

function describeRecord(row: NewHistoryRow): string {
	return row.step === null ? row.kind : `${row.kind} "${row.step}"`;
}

/** A group as people read it: `step.completed "charge-card"`, or its store calls when it holds no record. */
export function describeGroup(group: WriteGroup): string {
	return (group.writes.length ? group.writes : group.bookkeeping).join(', ');
}
