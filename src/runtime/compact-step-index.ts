import type { StepKind } from '../engine/support/step-kinds';
import type { StepStatus } from '../engine/support/statuses';
import { KV, seqOf } from './compact-keys';
import { lastRecordSeq, type StoredStep } from './compact-history';
import { readStepValue, type EncodedStep } from './compact-step-codec';

/** What the index knows of one step without its value: enough to count, find and page steps and their records. */
export interface IndexedStep {
	key: string;
	kind: StepKind;
	status: StepStatus;
	/** The records the step's key stands for: [seq, count, generation]. */
	rec?: [number, number, number];
	/** The last seq of its records, those it carries included (undefined: none). */
	last?: number;
	/** How many records it carries (compact-history.ts `CarriedRecord`): their values are in its key only. */
	carried?: number;
	/** The wake-up it bears (compact-step-wakeups.ts). */
	wk?: number;
	/**
	 * Where its value is kept (compact-folded-steps.ts): its own key (`own`), the instance record (`i`), inside the key of
	 * the step of that seq (a completed sleep carried by the step after it), or nowhere yet (`new`: written in this
	 * isolate, its put still to come).
	 */
	home: StepHome;
	/** The seq of the step whose value this one's key carries (`prior`), if any. */
	hosts?: number;
	/** How many times storage format 5 wrote it (`StoredStep.v`): of two copies, the higher is the later. */
	v?: number;
}

export type StepHome = 'own' | 'i' | 'new' | number;

/**
 * The steps of a compact instance by seq, without their values (results up to 1 MiB each): read once with one listing
 * (or known empty for a new object) and kept as the store writes, so that a status's counts, a key's lookup and a
 * history page read only the values they need, as the table layout's queries read only the rows they need.
 */
export class StepIndex {
	private readonly steps = new Map<number, IndexedStep>();
	private sorted: number[] | undefined = [];
	private top = 0;
	/** The seqs of the steps that bear a wake-up (few: the unfinished sleeps, retries and timeouts). */
	private readonly withWakeup = new Set<number>();

	/**
	 * Every step as storage holds it, in one listing: those folded into the instance record (`folded`), those with keys
	 * of their own, and those a later step's key carries. A step kept in two places was moved and the stale copy not yet
	 * rewritten: the copy written last wins (the higher `v`); of two written as often (or before `v`), its own key, then a
	 * carried copy, then the record's (compact-folded-steps.ts).
	 */
	static read(kv: SyncKvStorage, folded: readonly StoredStep[] | undefined, values?: Map<number, StoredStep>): StepIndex {
		const index = new StepIndex();
		for (const step of folded ?? []) {
			index.set(step.seq, step, 'i');
			values?.set(step.seq, step);
		}
		const later = (step: StoredStep, than: IndexedStep | undefined) => !than || (step.v ?? 0) >= (than.v ?? 0);
		// A step the record holds may carry the step before it (a completed step held for its turn: compact-folded-steps.ts).
		for (const step of folded ?? []) {
			const prior = step.prior;
			if (prior && later(prior, index.get(prior.seq))) {
				index.set(prior.seq, prior, step.seq);
				values?.set(prior.seq, prior);
			}
		}
		for (const [key, value] of kv.list<StoredStep | EncodedStep>({ prefix: KV.step })) {
			const seq = seqOf(key, KV.step);
			const step = readStepValue(value, 0);
			if (later(step, index.get(seq))) {
				index.set(seq, step, 'own');
				values?.set(seq, step);
			}
			const prior = step.prior;
			const held = prior && index.get(prior.seq);
			if (prior && (!held || (held.home === 'own' ? (prior.v ?? 0) > (held.v ?? 0) : later(prior, held)))) {
				index.set(prior.seq, prior, seq);
				values?.set(prior.seq, prior);
			}
		}
		return index;
	}

	get size(): number {
		return this.steps.size;
	}

	/** The highest seq of a step (0: none). */
	get highest(): number {
		return this.top;
	}

	get(seq: number): IndexedStep | undefined {
		return this.steps.get(seq);
	}

	/** Sets a step's entry; `home` unless given stays where it was (`new` for a step not known before). */
	set(seq: number, step: Pick<StoredStep, 'key' | 'kind' | 'status' | 'rec' | 'more' | 'wk' | 'prior' | 'v'>, home?: StepHome): void {
		const before = this.steps.get(seq);
		if (!before) {
			// Steps come in ascending seqs: the sorted list grows at its end, and is sorted again only after one that did not.
			if (this.sorted && seq > this.top) this.sorted.push(seq);
			else this.sorted = undefined;
		}
		const last = lastRecordSeq(step);
		this.steps.set(seq, {
			key: step.key, kind: step.kind, status: step.status, ...(step.rec ? { rec: step.rec } : {}), ...(last !== undefined ? { last } : {}),
			...(step.more?.length ? { carried: step.more.length } : {}), ...(step.wk !== undefined ? { wk: step.wk } : {}),
			home: home ?? before?.home ?? 'new', ...(step.prior ? { hosts: step.prior.seq } : {}), ...(step.v !== undefined ? { v: step.v } : {}),
		});
		if (step.wk !== undefined) this.withWakeup.add(seq);
		else this.withWakeup.delete(seq);
		this.top = Math.max(this.top, seq);
	}

	/** Moves a step's value to `home` (its entry otherwise unchanged). */
	move(seq: number, home: StepHome): void {
		const entry = this.steps.get(seq);
		if (entry) entry.home = home;
	}

	/** The steps whose value is in the instance record. */
	foldedSeqs(): number[] {
		return this.seqs().filter((seq) => this.steps.get(seq)!.home === 'i');
	}

	delete(seq: number): void {
		if (!this.steps.delete(seq)) return;
		this.withWakeup.delete(seq);
		this.sorted = undefined;
		if (seq !== this.top) return;
		this.top = 0;
		for (const other of this.steps.keys()) if (other > this.top) this.top = other;
	}

	/** The steps that bear a wake-up. */
	*bearing(): Iterable<[number, IndexedStep]> {
		for (const seq of this.withWakeup) yield [seq, this.steps.get(seq)!];
	}

	/** Seqs in ascending order. */
	seqs(): readonly number[] {
		return (this.sorted ??= [...this.steps.keys()].sort((a, b) => a - b));
	}

	seqOfKey(key: string): number | undefined {
		for (const [seq, step] of this.steps) if (step.key === key) return seq;
		return undefined;
	}

	/** Every step, in seq order, without values. */
	*entries(): Iterable<[number, IndexedStep]> {
		for (const seq of this.seqs()) yield [seq, this.steps.get(seq)!];
	}

	/** The values of the steps whose records end after `afterSeq`, in seq order (their records ascend with it), read lazily. */
	*withRecordsAfter(read: (seq: number) => StoredStep | undefined, afterSeq: number): Iterable<StoredStep> {
		for (const seq of this.seqs()) {
			const last = this.steps.get(seq)!.last;
			if (last === undefined || last <= afterSeq) continue;
			const step = read(seq);
			if (step) yield step;
		}
	}
}
