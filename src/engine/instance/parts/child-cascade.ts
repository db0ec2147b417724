import { CASCADE_WAKEUP, childrenToTerminate, checkChildOutcome, NoticedOutcomes, type ChildOutcome, type ChildPort } from '../../children/child-workflows';
import type { InstanceRow } from '../../storage/store';
import { stepRowsWithSmallResults } from '../../steps/step-rows';
import { FINISHED_STATUSES } from '../../support/statuses';
import type { InstancePart, PartKernel } from '../part';
import { outcomeOf } from '../../children/child-workflows';
import { outboxBackoffMs } from '../../support/timing';

/**
 * The instance among its parent and children (see child-workflows.ts): it tells its
 * parent when it finishes, keeps the outcomes its children's notices bring for the
 * next pass, and, terminated, terminates its unfinished children (the cascade),
 * retried from the alarm until every one answered.
 */
export class ChildCascade implements InstancePart {
	/** Outcomes that children's notices brought, for the next pass only (bounded; see NoticedOutcomes). */
	private readonly noticed = new NoticedOutcomes();
	/** Failed rounds of the cascade since this engine started (its backoff). */
	private attempts = 0;
	/** Asks of the recorded parent waiting now for this instance's outcome (its invoke's create; see `parentAskBegan`). */
	private parentAsks = 0;
	/** The notice to the parent, held back while its ask waits. */
	private heldNotice: { parentId: string; childId: string; outcome: ChildOutcome } | undefined;

	constructor(private readonly k: PartKernel) {}

	/** A child finished: a pass about to run answers its invoke from the outcome the notice carries. */
	notice(childId: unknown, outcomeInput: unknown): void {
		const outcome = checkChildOutcome(outcomeInput);
		if (typeof childId === 'string' && outcome) this.noticed.keep(childId, outcome);
	}

	/**
	 * The host's child port for one pass, answering a child's outcome from the notices that
	 * came before the pass. Every pass takes them all, even one that returns at once: none
	 * outlives the next pass.
	 */
	portForPass(): ChildPort | undefined {
		const noticed = this.noticed.takeAll();
		const port = this.k.host.children;
		if (!port) return undefined;
		return {
			...port,
			outcome: async (id, waitMs) => {
				const outcome = noticed.get(id);
				if (!outcome) return port.outcome(id, waitMs);
				noticed.delete(id);
				return outcome;
			},
		};
	}

	/** The children a terminate must terminate (those started without `onParentTerminate: 'abandon'`). */
	toTerminate(): string[] {
		return this.k.host.children ? childrenToTerminate(stepRowsWithSmallResults(this.k.host.store)) : [];
	}

	/** Inside the terminate's transaction: the cascade is durable before the children are told (the alarm retries it). */
	arm(children: readonly string[]): void {
		if (children.length > 0) this.k.host.store.setWakeup(CASCADE_WAKEUP, this.k.host.now());
	}

	/** After the terminate is stored: the children are told now. */
	start(children: readonly string[]): void {
		if (children.length > 0) this.k.host.background(this.terminateChildren());
	}

	/**
	 * Best effort: the parent also polls its waiting invokes, so a lost notice only delays it.
	 * While the parent's ask waits for the outcome, the notice waits for the ask (see `parentAskBegan`).
	 */
	afterTransition(previous: InstanceRow | undefined, row: InstanceRow): void {
		const finishing = FINISHED_STATUSES.includes(row.status) && !(previous && FINISHED_STATUSES.includes(previous.status));
		if (!finishing || !row.parentId || !this.k.host.children) return;
		const outcome = outcomeOf(row);
		if (!outcome) return;
		const notice = { parentId: row.parentId, childId: row.id, outcome };
		if (this.parentAsks > 0) this.heldNotice = notice;
		else this.notifyParent(notice);
	}

	/**
	 * The recorded parent asks for the outcome and waits (its invoke's create): a run that
	 * finishes meanwhile holds its notice back, since the answer will carry the outcome.
	 */
	parentAskBegan(): void {
		this.parentAsks++;
	}

	/**
	 * The parent's ask answered `answer`. Once no ask waits, a held notice is dropped if an
	 * answer carried the outcome (the notice would only wake the parent for a pass with
	 * nothing to do), else sent. Should that answer be lost (the parent died meanwhile, the
	 * call timed out), the parent still has its outcome: its step row says the child was
	 * started and not answered, so its next pass (the alarm's, after a crash) asks again.
	 */
	parentAskEnded(answer: ChildOutcome | null): void {
		this.parentAsks--;
		const held = this.heldNotice;
		if (!held || this.parentAsks > 0) return;
		this.heldNotice = undefined;
		if (!answer) this.notifyParent(held);
	}

	private notifyParent({ parentId, childId, outcome }: { parentId: string; childId: string; outcome: ChildOutcome }): void {
		const port = this.k.host.children;
		if (port) this.k.host.background(port.notifyParent(parentId, childId, outcome).catch(() => undefined));
	}

	/** The cascade's wake-up is a row of the wake-ups table, armed by the replay loop's due time. */
	dueAt(): undefined {
		return undefined;
	}

	/** A terminated instance's only wake-up is its cascade: a due one takes the alarm. */
	onAlarm(now: number): boolean {
		const k = this.k;
		if (k.row?.status !== 'terminated') return false;
		const wake = k.host.store.earliestWakeup();
		if (wake === undefined || wake > now) return false;
		k.host.background(this.terminateChildren());
		return true;
	}

	/**
	 * Terminates the unfinished children of a terminated instance. The cascade's wake-up
	 * was written with the terminate; it goes once every child answered, else the alarm
	 * tries again with backoff.
	 */
	private async terminateChildren(): Promise<void> {
		const k = this.k;
		const port = k.host.children;
		if (!port || k.row?.status !== 'terminated') return;
		const children = childrenToTerminate(stepRowsWithSmallResults(k.host.store));
		const results = await Promise.allSettled(children.map((id) => port.terminate(id)));
		const failed = results.filter((r) => r.status === 'rejected').length;
		if (k.gone || k.row?.status !== 'terminated') return;
		if (failed === 0) k.host.store.deleteWakeup(CASCADE_WAKEUP);
		else {
			this.attempts++;
			k.host.store.setWakeup(CASCADE_WAKEUP, k.host.now() + outboxBackoffMs(this.attempts));
			k.host.log?.({ severity: 'warn', event: 'child.terminate_failed', instanceId: k.row.id, type: k.row.type, failed });
		}
		k.rearm();
	}
}
