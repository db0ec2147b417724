import type { StoredStep } from './compact-history';
import type { InstanceRecord } from './compact-instance-record';
import { encodeInstance } from './compact-record-codec';
import { storedBytes } from './compact-stored-size';
import type { StepHome, StepIndex } from './compact-step-index';

/**
 * At most this many sleeps are kept in the instance record: every put of the record carries them again (a sleep's
 * value is small: no result, its two records), so they stay a few KiB. A sleep beyond takes a key of its own.
 */
export const MAX_FOLDED_STEPS = 16;

/**
 * An event that arrives while the instance waits rides in the record until its pass consumes it (compact-parts.ts
 * `mayHoldEvent`), if its payload is at most this many characters and the record holds fewer than `MAX_HELD_EVENTS`:
 * an event the pass does not consume at once (another wait's) is carried again by every put of the record meanwhile,
 * so at most 4 x 4 KiB. A larger one keeps its own key (its put and delete, 2 rows).
 */
export const MAX_HELD_EVENT_CHARS = 4096;
export const MAX_HELD_EVENTS = 4;

/**
 * Storage format 5 (docs/decisions.md "Sleeps folded into the writes around them"): a sleep costs no row of its own.
 * - Its `sleeping` write waits for the next put of the instance record (the pass's `sleeping` status, in the next
 *   transaction) and rides in it (`st`): 1 row for the sleep and the status. A crash before that put loses both, as a
 *   crash before the sleep's write did: the replay starts the sleep again.
 * - Its completion (a sleep the record holds) waits for the pass's next write and rides in it: the record's put (the
 *   outcome, the next wait) or the put of the next step, whose value then carries the completed sleep (`prior`). Until
 *   then storage holds the sleep `sleeping` with its wake-up due, so a crash before it runs the woken pass again, which
 *   completes the sleep again; nothing written after the completion is durable before it.
 * A step kept in two places (moved, the stale copy not yet rewritten) is read from its own key first, then from the
 * step that carries it, then from the record (compact-step-index.ts `read`).
 */
export interface Placement {
	dirty: boolean;
	/** The steps whose put waits for the next write. */
	deferred: StoredStep[];
	/** A wait the record holds completed in this transaction (it consumed its event): the record's put may wait for its turn's next write. */
	consumed: boolean;
}

/**
 * Where the steps a transaction wrote go, at its end: `pending` keeps those put under their own keys; the others
 * move into the record (`record.st`, then `dirty`) or into the put of the step above them. `deferred` are the steps an
 * earlier transaction left waiting, which go now (or wait on together: a step held for its turn and the sleep or wait
 * set right after it, for the record's put of the `sleeping` or `waiting` status).
 */
export function placeSteps(args: { fold: boolean; index: StepIndex; pending: Map<number, StoredStep>; record: InstanceRecord | undefined; dirty: boolean; deferred: readonly StoredStep[] }): Placement {
	const { index, pending, record } = args;
	let dirty = args.dirty;
	let consumed = false;
	// Written again in this transaction: the later value is the one to put.
	const waiting = args.deferred.filter((step) => !pending.has(step.seq));
	// The step a step of this transaction may carry (of a pair, the one held for its turn); the others go to the record.
	const earlier = waiting.length === 1 ? waiting[0] : waiting.find(isTurnHeld);
	const others = waiting.filter((step) => step !== earlier);
	const fold = (step: StoredStep) => {
		record!.st = [...(record!.st ?? []).filter((held) => held.seq !== step.seq), step].sort((a, b) => a.seq - b.seq);
		index.move(step.seq, 'i');
	};
	let candidate: StoredStep | undefined;
	/** `earlier` is carried by a step of this transaction. */
	let carried = false;
	for (const [seq, step] of [...pending]) {
		const home = index.get(seq)?.home;
		// A step just completed above a held one carries it (`prior`), and may be held in turn (into the record only).
		if (!carried && earlier && isTurnHeld(step) && seq > earlier.seq && embeddable(earlier) && !step.prior && index.get(seq)?.hosts === undefined) {
			step.prior = earlier;
			index.set(seq, step);
			index.move(earlier.seq, seq);
			carried = true;
		}
		if (args.fold && record && foldable(step, home, record) && (!candidate || seq > candidate.seq)) {
			candidate = step;
			continue;
		}
		// A sleep or a wait the record holds, written again (a wake-up cleared, a cancel, the wait's event): in the record's
		// put, when small. Any other (a retry's wait, a wait's large event) goes back to its own key: the record's copy is
		// older (`v`), dropped at its next put.
		if (home === 'i' && record && (step.kind === 'sleep' || (step.kind === 'wait' && fits(step, record)))) {
			pending.delete(seq);
			fold(step);
			dirty = true;
			if (step.kind === 'wait' && step.status === 'completed') consumed = true;
		}
	}
	if (candidate) pending.delete(candidate.seq);
	const top = topPending(index, pending);
	/** The top step carries one already (`prior` is one level deep). */
	let topTaken = carried;
	/** Into the record's put, or into the top step's: false when neither takes it. */
	const place = (step: StoredStep): boolean => {
		if (dirty && holdable(step, record!, index)) fold(step);
		else if (!topTaken && embeddable(step) && top && top.seq > step.seq) {
			top.prior = step;
			index.set(top.seq, top);
			index.move(step.seq, top.seq);
			topTaken = true;
		} else return false;
		return true;
	};
	for (const step of others) if (!place(step)) pending.set(step.seq, step);
	const unplaced = earlier && !carried && !place(earlier) ? earlier : undefined;
	let deferred: StoredStep[] = [];
	if (candidate) {
		if (place(candidate)) {
			// in the record's put or the top step's
		} else if (dirty) pending.set(candidate.seq, candidate);
		// This transaction writes the record anyway and cannot take it: its own key now, deferring further saves nothing.
		else deferred = [candidate];
	}
	if (unplaced) {
		// A completed step with the sleep or wait set right after it in its turn: both wait for the status's put.
		if (isTurnHeld(unplaced) && deferred.length === 1 && !isTurnHeld(deferred[0]!)) deferred = [unplaced, deferred[0]!];
		else pending.set(unplaced.seq, unplaced);
	}
	return { dirty, deferred, consumed };
}

/**
 * A step this format keeps out of a key of its own: a sleep just set (never put), or one the record holds completed;
 * a failed attempt waiting out its retry delay (a retry's sleep: its outcome and the `sleeping` status in one put),
 * when small (its error's stack and message are rewritten by every later put of the record until its next attempt).
 */
function foldable(step: StoredStep, home: StepHome | undefined, record: InstanceRecord): boolean {
	const room = (record.st?.length ?? 0) < MAX_FOLDED_STEPS;
	// A step just completed (a `do`'s, an invoke's): its put waits for the next write of the same turn (the record's put,
	// the next step's) and rides in it (the store flushes it at the turn's end otherwise: compact-turn-flush.ts). Not one
	// kept in another step's key. One the record holds is a retried step's last attempt, settled at once (its start
	// written with it): the record's copy, `retrying`, is older (`v`) and dropped at the record's next put. One that
	// carries a completed step may go into the record, never into another step (`prior` is one level deep: `embeddable`).
	if (isTurnHeld(step)) return home === 'new' || home === 'own' || home === 'i';
	// A failed attempt waiting out its delay, the record's copy of an earlier one too (the later `v` is read).
	if (step.status === 'retrying') return step.kind === 'do' && (room || home === 'i') && step.result === null && fits(step, record);
	// A wait just set: with the `waiting` status.
	if (step.kind === 'wait') return step.status === 'waiting' && home === 'new' && room && fits(step, record);
	if (step.kind !== 'sleep') return false;
	if (step.status === 'sleeping') return home === 'new' && room;
	return step.status === 'completed' && home === 'i';
}

/**
 * At most this many characters of a step's texts (its result, its error, the records it carries) ride in the record,
 * and at most `FOLDED_CHARS` of every step it holds together: every put of the record carries them again (a completed
 * wait stays, its result the event's payload). Beyond, the step takes a key of its own.
 */
export const FOLDED_STEP_CHARS = 4096;
export const FOLDED_CHARS = 16 * 1024;

const chars = (text: unknown) => (typeof text === 'string' ? text.length : text === null || text === undefined ? 0 : Infinity);

function stepChars(step: StoredStep): number {
	let sum = 0;
	for (const text of [step.result, step.errorMessage, step.errorStack, step.errorName, step.errorCode]) sum += chars(text);
	for (const record of step.more ?? []) sum += chars(record.value) + chars(record.detail);
	// The step it carries is written with it.
	if (step.prior) sum += stepChars(step.prior);
	return sum;
}

/** Small, and within what the record's other steps leave. */
function fits(step: StoredStep, record: InstanceRecord): boolean {
	const own = stepChars(step);
	if (own > FOLDED_STEP_CHARS) return false;
	let held = 0;
	for (const other of record.st ?? []) if (other.seq !== step.seq) held += stepChars(other);
	return held + own <= FOLDED_CHARS;
}

/**
 * A completed step whose put storage format 5 holds until the next write of the same turn (item 1 of "The last step
 * rides in the outcome", docs/decisions.md): a `step.do`'s or a `step.invoke`'s completion.
 */
export function isTurnHeld(step: StoredStep): boolean {
	return step.status === 'completed' && (step.kind === 'do' || step.kind === 'child');
}

/**
 * A completed step the key of the step after it may carry: a sleep (small), or a step held for the turn whose texts are
 * at most `FOLDED_STEP_CHARS` (a step's value holds at most one other's, so a key stays within its result's size and 4 KiB).
 */
function embeddable(step: StoredStep): boolean {
	return step.status === 'completed' && !step.prior && (!isTurnHeld(step) || stepChars(step) <= FOLDED_STEP_CHARS);
}

/** The record may hold it: a sleep, a wait or a retry as `foldable` chose them; a step held for the turn only when small. */
function holdable(step: StoredStep, record: InstanceRecord, index: StepIndex): boolean {
	if (!isTurnHeld(step)) return true;
	return (record.st?.filter((held) => held.seq !== step.seq).length ?? 0) < MAX_FOLDED_STEPS && fits(step, record) && withinPage(withStep(record, step, index));
}

/**
 * The record as it is put with the step: the step, and the one it carries, replace their copies the record holds, and
 * the copies of steps kept elsewhere since (a retried step's `retrying` copy once its success took a key) are dropped, as
 * its put drops them (`prunedFolded`): measured with them, a step that fits was given a key of its own.
 */
function withStep(record: InstanceRecord, step: StoredStep, index: StepIndex): InstanceRecord {
	const st = (record.st ?? []).filter((held) => held.seq !== step.seq && held.seq !== step.prior?.seq && (index.get(held.seq)?.home ?? 'i') === 'i');
	return { ...record, st: [...st, step].sort((a, b) => a.seq - b.seq) };
}

/**
 * A held step rides in the instance record only while the record, as storage keeps it (its compact encoding,
 * compact-record-codec.ts, in V8's serialization: compact-stored-size.ts), stays within this many bytes: the key-value
 * table is a `WITHOUT ROWID` b-tree whose cell keeps at most 1,002 bytes of key and value on a 4 KiB page (SQLite's
 * `maxLocal` for an index b-tree: (4096 - 12) * 64 / 255 - 23), the rest going to an overflow page, 4 KiB kept for the
 * instance's retention (a trivial run's record once went 3 -> 4 pages, its instance 16 -> 20 KiB). Measured in workerd
 * (test/runtime/compact-record-page.test.ts): a record of this many bytes keeps its page, one byte more takes an
 * overflow page, whatever its shape (997 + the key's byte + SQLite's 4 bytes of cell header = 1,002). Beyond, the step takes a key of its own in the record's transaction: a row ($1 per million) where the
 * page would be ~$0.19 per million runs, but a page a run keeps for as long as it is kept, in every run of the type.
 * (Before the compact encoding the bound was 1,100 JSON characters of the object form, which has no fixed ratio to
 * stored bytes.)
 */
export const RECORD_PAGE_BYTES = 997;

/** The record, encoded, keeps its page (`RECORD_PAGE_BYTES`). */
export function withinPage(record: InstanceRecord): boolean {
	return storedBytes(encodeInstance(record)) <= RECORD_PAGE_BYTES;
}

/** The step this transaction wrote that is above every other, if it carries no other step yet: it may carry one. */
function topPending(index: StepIndex, pending: Map<number, StoredStep>): StoredStep | undefined {
	const top = pending.get(index.highest);
	return top && !top.prior && index.get(top.seq)?.hosts === undefined ? top : undefined;
}

/** A wait the record holds, still waiting for an event of this name (its `wait.started` record, carried with it, names it). */
export function waitsFor(step: StoredStep, name: string): boolean {
	if (step.kind !== 'wait' || step.status !== 'waiting') return false;
	for (const record of step.more ?? []) {
		if (record.kind !== 'wait.started' || typeof record.detail !== 'string') continue;
		try {
			if ((JSON.parse(record.detail) as { event?: unknown }).event === name) return true;
		} catch {
			// not a detail this build wrote: not this wait
		}
	}
	return false;
}

/**
 * A record grown past its page since a step held for its turn rode in it (a later status, its records, a held event)
 * gives such steps, from the last, keys of their own in its put's transaction until it keeps its page again: a row each,
 * where the page would be an overflow page kept for the instance's retention (`RECORD_PAGE_BYTES`). A sleep or a wait
 * stays: it rode in the record before any step did.
 */
export function spillTurnHeld(record: InstanceRecord, index: StepIndex | undefined, put: (step: StoredStep) => void): void {
	while (record.st && !withinPage(record)) {
		const last = record.st.findLast(isTurnHeld);
		if (!last) return;
		put(last);
		index?.move(last.seq, 'own');
		record.st = record.st.filter((step) => step !== last);
		if (record.st.length === 0) delete record.st;
	}
}

/** The record's sleeps, without the stale copies of those moved elsewhere (read only while the index is known). */
export function prunedFolded(record: InstanceRecord, index: StepIndex | undefined): void {
	if (!record.st || !index) return;
	const kept = record.st.filter((step) => index.get(step.seq)?.home === 'i');
	if (kept.length > 0) record.st = kept;
	else delete record.st;
}
