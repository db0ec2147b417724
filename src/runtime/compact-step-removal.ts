import { stepRecords, type StoredRecord, type StoredStep } from './compact-history';
import type { InstanceRecord } from './compact-instance-record';
import { KV, seqKey } from './compact-keys';
import type { StepIndex } from './compact-step-index';

/**
 * Removes the steps `which` picks (a restart, a restart-from: compact-instance-store.ts), wherever each is kept: its
 * own key, the instance record, or the key of the step after it (compact-folded-steps.ts). Their records take keys of
 * their own first (the history keeps them). Every copy of a removed step goes, a stale one too (it would be read
 * again), and a kept step whose carrier goes takes a key of its own. Answers whether the record changed (its put is
 * the caller's).
 */
export function removeSteps(args: {
	kv: SyncKvStorage;
	/** Every step and where it is kept, with `values` (the step as read from there), as storage holds them. */
	index: StepIndex;
	values: Map<number, StoredStep>;
	record: InstanceRecord | undefined;
	which: (step: StoredStep) => boolean;
	putRecordKey: (record: StoredRecord) => void;
	/** Puts a step under its own key, as the store encodes it. */
	putStep: (seq: number, step: StoredStep) => void;
}): boolean {
	const { kv, index, values, record } = args;
	const removed = new Set<number>();
	for (const [seq] of index.entries()) {
		const step = values.get(seq)!;
		if (!args.which(step)) continue;
		removed.add(seq);
		for (const stored of stepRecords(step)) args.putRecordKey(stored);
		// Its own key whatever its home: a step whose completion rode in the next step's key (or the record)
		// may have left its start there, a stale copy the index would read again once its carrier is gone.
		kv.delete(seqKey(KV.step, seq));
	}
	let changed = false;
	for (const [seq, { home }] of index.entries()) {
		const host = values.get(seq)!;
		// A step in its own key or in the record may carry the one before it.
		const prior = home === 'own' || home === 'i' ? host.prior : undefined;
		if (!prior || removed.has(seq) === removed.has(prior.seq)) continue;
		if (removed.has(prior.seq)) {
			const { prior: _prior, ...rest } = host;
			if (home === 'own') args.putStep(seq, rest);
			else if (record?.st) {
				record.st = record.st.map((step) => (step.seq === seq ? rest : step));
				changed = true;
			}
		} else if (index.get(prior.seq)?.home === seq) args.putStep(prior.seq, prior);
	}
	if (!record?.st?.some((step) => removed.has(step.seq))) return changed;
	record.st = record.st.filter((step) => !removed.has(step.seq));
	return true;
}
