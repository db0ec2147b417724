import { Workflow, type Step } from 'shardflow/workflow';

export class Greeter extends Workflow<{ name: string }, { greeting: string }> {
	static override readonly type = 'greeter';

	async run(step: Step, { name }: { name: string }) {
		const greeting = await step.do('greet', () => `Hello, ${name}!`);
		await step.sleep('nap', '1 second');
		return { greeting };
	}
}
