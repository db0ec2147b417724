import { z } from 'zod';
import { Workflow, type Step } from '../../../src/authoring'; // in your own Worker: 'shardflow/workflow'

const payload = z.object({
	/** How many parts the import has (1-1000). */
	parts: z.number().int().min(1).max(1000),
	/** How long each part takes, in milliseconds (0-10,000): the demo's stand-in for real work. */
	partMs: z.number().int().min(0).max(10_000).default(200),
});

const streams = {
	/** After each part: how many are done, of how many. */
	progress: z.object({ done: z.number().int(), of: z.number().int(), percent: z.number().min(0).max(100) }),
};

export type ProgressPayload = z.input<typeof payload>;

/**
 * An import in parts that reports its progress live (docs/streams.md): each part
 * is a step, and after each one `step.emit('progress', ...)` publishes how far
 * it got. The example page (`/examples/progress`) starts one and draws its
 * progress bar from the instance's stream.
 */
export class ProgressWorkflow extends Workflow<ProgressPayload, { parts: number }> {
	static override readonly type = 'progress';
	static override payload = payload;
	static override streams = streams;

	async run(step: Step<{}, typeof ProgressWorkflow.streams>, input: ProgressPayload): Promise<{ parts: number }> {
		const { parts, partMs } = payload.parse(input);
		for (let done = 1; done <= parts; done++) {
			await step.do(`part-${done}`, async () => {
				if (partMs > 0) await new Promise((resolve) => setTimeout(resolve, partMs));
				return done;
			});
			await step.emit('progress', { done, of: parts, percent: Math.round((done / parts) * 100) });
		}
		return { parts };
	}
}
