import { z } from 'zod';
import { Workflow, type PayloadOf, type Step } from '../../../src/authoring'; // in your own Worker: 'shardflow/workflow'

const payload = z.object({
	/** Seconds between two beats (1-3600). */
	everySeconds: z.number().int().min(1).max(3600).default(60),
});

/**
 * A monitor that checks in every `everySeconds` until it is stopped: a run that sleeps in a loop,
 * so its status and version move by themselves (sleeping, running, sleeping), the kind of
 * instance a bulk terminate stops (docs/bulk-operations.md). Tagged with a customer to find it by.
 */
export class HeartbeatWorkflow extends Workflow<z.input<typeof payload>, { beats: number }> {
	static override readonly type = 'heartbeat';
	static override payload = payload;
	static override readonly attributes = { customerId: 'keyword' } as const;

	async run(step: Step, input: PayloadOf<typeof payload>): Promise<{ beats: number }> {
		const { everySeconds } = payload.parse(input);
		// Bounded, as every run should be: a day of beats at one a minute.
		const beats = 1440;
		for (let beat = 1; beat <= beats; beat++) await step.sleep(`beat-${beat}`, `${everySeconds} seconds`);
		return { beats };
	}
}
