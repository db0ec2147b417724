import { z } from 'zod';
import { NonRetryableError, Workflow, type Step } from '../../src/authoring';
import { countExecution } from './probes';

/**
 * Books a flight and a car, then pays: with `fail`, the payment fails for good
 * and the rollbacks run (car, then flight). The rollback named by `hangUndo`
 * never finishes on its first execution: for crashes mid-rollback. With `wait`,
 * it waits for `go` before paying: for a terminate with rollback.
 */
export class SagaWorkflow extends Workflow<{ fail?: boolean; hangUndo?: string; wait?: boolean }, string> {
	static override readonly type = 'saga';
	static override events = { go: z.object({}) };
	static override defaults = { retries: { limit: 2, delay: '1s', backoff: 'constant' as const } };
	async run(step: Step<typeof SagaWorkflow.events>, { fail, hangUndo, wait }: { fail?: boolean; hangUndo?: string; wait?: boolean }) {
		const undo = (name: string) => async (result: unknown) => {
			const n = countExecution(`${this.ctx.id}:undo-${name}:${JSON.stringify(result)}`);
			if (hangUndo === name && n === 1) await new Promise(() => {});
		};
		await step.do('flight', () => (countExecution(`${this.ctx.id}:flight`), 'F1'), { rollback: undo('flight') });
		await step.do('car', () => (countExecution(`${this.ctx.id}:car`), 'C1'), { rollback: undo('car') });
		if (wait) await step.waitForEvent('go');
		await step.do('pay', () => {
			if (fail) throw new NonRetryableError('card declined');
			return 'paid';
		});
		return 'booked';
	}
}

/**
 * `n` steps that each call an outside API once, each with a compensation that calls it once
 * more (a refund), then a step that fails for good: the compensations' subrequests per invocation.
 */
export class CompensatingFetcherWorkflow extends Workflow<{ n: number }, never> {
	static override readonly type = 'compensating-fetcher';
	async run(step: Step, { n }: { n: number }): Promise<never> {
		for (let i = 0; i < n; i++) {
			await step.do(`call-${i}`, async () => ((await fetch(`http://outside.test/${i}`)).ok ? i : -1), {
				rollback: async () => {
					countExecution(`${this.ctx.id}:refund-${i}`);
					await fetch(`http://outside.test/refund/${i}`);
				},
			});
		}
		await step.do('fail', () => Promise.reject(new NonRetryableError('the last call was refused')));
		throw new Error('unreachable');
	}
}
