import type { InstanceStore, StepRow } from '../storage/store';

/**
 * The step attempt a pass cut short was running: a `do` or rollback row still `running` (its
 * start was written before it awaited I/O, and nothing settled it). With parallel steps several
 * may be; the one reached last is named. Read only when a repeated cut is logged (`pass.cut`),
 * so a pass that goes well reads nothing more.
 */
export function cutAttempt(store: Pick<InstanceStore, 'readStepsOfKind'>): Pick<StepRow, 'name' | 'attempts'> | undefined {
	const running = [...store.readStepsOfKind('do', 'running'), ...store.readStepsOfKind('rollback', 'running')];
	return running.sort((a, b) => a.seq - b.seq).at(-1);
}
