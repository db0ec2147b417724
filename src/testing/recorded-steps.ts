import type { HistoryError, HistoryEvent } from '../engine/history/history';
import type { StepKind } from '../engine/support/step-kinds';

/** How a recorded step ended, as far as the history goes. */
export type RecordedOutcome =
	| { type: 'completed'; value: unknown }
	| { type: 'failed'; attempts: number; error: HistoryError }
	| { type: 'timed_out'; event: string }
	/** Started and not finished when the history was exported (sleeping, waiting, retrying or in flight). */
	| { type: 'pending' };

/** One step of a recorded run, in the order the run first reached it. */
export interface RecordedStep {
	kind: StepKind;
	name: string;
	/** 0 for the first step the run reached. */
	position: number;
	/** Its first and its final record: two steps whose spans overlap ran concurrently. */
	firstSeq: number;
	lastSeq: number;
	outcome: RecordedOutcome;
	/** A webhook's call, as far as the history goes: its body (`completed`) or `timed_out`; pending without one. */
	reply?: { type: 'completed'; value: unknown } | { type: 'timed_out' };
}

/** A recorded run: its payload, its steps and how it ended. */
export interface RecordedRun {
	payload: { value: unknown } | undefined;
	steps: RecordedStep[];
	end: { status: 'completed'; output: unknown } | { status: 'errored'; error: HistoryError } | { status: 'terminated' } | undefined;
}

const KIND_OF_RECORD: Partial<Record<HistoryEvent['kind'], StepKind>> = {
	'step.started': 'do',
	'step.completed': 'do',
	'step.attempt_failed': 'do',
	'step.failed': 'do',
	'sleep.started': 'sleep',
	'sleep.finished': 'sleep',
	'wait.started': 'wait',
	'wait.timed_out': 'wait',
	'event.consumed': 'wait',
	'patch.recorded': 'patch',
	'attributes.set': 'attributes',
	'webhook.created': 'webhook',
	'webhook.received': 'webhook',
	'webhook.timed_out': 'webhook',
	'child.started': 'child',
	'child.completed': 'child',
	'child.failed': 'child',
};

/**
 * Reads the steps of the last generation in `events` (the records of
 * `GET /workflows/:id/history`, see docs/history-format.md) in first-reached
 * order, each with its outcome. Kinds it does not know are skipped, as the
 * format asks of readers.
 */
export function recordedRun(events: readonly HistoryEvent[]): RecordedRun {
	const generation = Math.max(-1, ...events.map((e) => e.generation));
	const byKey = new Map<string, RecordedStep>();
	const steps: RecordedStep[] = [];
	let payload: RecordedRun['payload'];
	let end: RecordedRun['end'];
	for (const event of [...events].sort((a, b) => a.seq - b.seq)) {
		if (event.generation !== generation) continue;
		if (event.kind === 'workflow.created') payload = { value: event.payload };
		if (event.kind === 'workflow.completed') end = { status: 'completed', output: event.output };
		if (event.kind === 'workflow.errored') end = { status: 'errored', error: event.error };
		if (event.kind === 'workflow.terminated') end = { status: 'terminated' };
		const kind = KIND_OF_RECORD[event.kind];
		if (!kind || !('step' in event)) continue;
		const key = `${kind}:${event.step}`;
		let step = byKey.get(key);
		if (!step) {
			step = { kind, name: event.step, position: steps.length, firstSeq: event.seq, lastSeq: Number.POSITIVE_INFINITY, outcome: { type: 'pending' } };
			byKey.set(key, step);
			steps.push(step);
		}
		if (event.kind === 'webhook.received' || event.kind === 'webhook.timed_out') {
			step.reply = event.kind === 'webhook.received' ? { type: 'completed', value: event.payload } : { type: 'timed_out' };
			step.lastSeq = event.seq;
		}
		const outcome = outcomeOf(event);
		if (outcome) {
			step.outcome = outcome;
			step.lastSeq = event.seq;
		}
	}
	return { payload, steps, end };
}

function outcomeOf(event: HistoryEvent): RecordedOutcome | undefined {
	switch (event.kind) {
		case 'step.completed':
			return { type: 'completed', value: event.result };
		case 'step.failed':
			return { type: 'failed', attempts: event.attempt, error: event.error };
		case 'sleep.finished':
			return { type: 'completed', value: undefined };
		case 'event.consumed':
			return { type: 'completed', value: event.payload };
		case 'wait.timed_out':
			return { type: 'timed_out', event: event.event };
		case 'patch.recorded':
			return { type: 'completed', value: true };
		case 'attributes.set':
			return { type: 'completed', value: undefined };
		case 'webhook.created':
			return { type: 'completed', value: { url: event.url, expiresAt: event.expiresAt } };
		// A fire-and-forget start returns its child's id, known once the step is recorded.
		case 'child.started':
			return event.mode === 'start' ? { type: 'completed', value: event.childId } : undefined;
		case 'child.completed':
			return { type: 'completed', value: event.output };
		case 'child.failed':
			return { type: 'failed', attempts: 1, error: event.error ?? { name: 'ChildWorkflowError', message: `child workflow "${event.childId}" ${event.status}` } };
		default:
			return undefined;
	}
}

/** Whether two recorded steps were in flight at the same time (so their order in the record is timing, not code). */
export function ranConcurrently(a: RecordedStep, b: RecordedStep): boolean {
	return a.firstSeq < b.lastSeq && b.firstSeq < a.lastSeq;
}
