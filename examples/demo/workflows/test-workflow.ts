import { z } from 'zod';
import { Workflow, type PayloadOf, type Step } from '../../../src/authoring'; // in your own Worker: 'shardflow/workflow'

const payload = z.object({ name: z.string().min(1).max(200) });

/** The README demo: greet, nap for a second, return the greeting. */
export class TestWorkflow extends Workflow<PayloadOf<typeof payload>, { greeting: string }> {
	static override readonly type = 'test';
	static override payload = payload;

	async run(step: Step, { name }: PayloadOf<typeof payload>) {
		const greeting = await step.do('greet', async () => `Hello, ${name}!`);
		await step.sleep('nap', '1 second');
		return { greeting };
	}
}
