import { Workflow, WebhookExpiredError, type Step, type Duration } from '../../src/authoring';
import { countExecution } from './probes';

/** Sends a webhook URL out in a step, then waits for its one POST (or its timeout). */
export class HookApprovalWorkflow extends Workflow<{ timeout?: Duration }, unknown> {
	static override readonly type = 'hook-approval';
	async run(step: Step, { timeout }: { timeout?: Duration }) {
		const hook = await step.webhook('approval', timeout ? { timeout } : {});
		await step.do('send', () => (countExecution(`${this.ctx.id}:send`), hook.url));
		try {
			return { body: await hook.wait() };
		} catch (error) {
			if (error instanceof WebhookExpiredError) return 'expired';
			throw error;
		}
	}
}
