import { z } from 'zod';
import { EventTimeoutError, Workflow, type PayloadOf, type Step } from 'shardflow/workflow';

const payload = z.object({ email: z.email() });

const events = {
	'email-verified': z.object({ verifiedAt: z.string() }),
};

export type SignupPayload = PayloadOf<typeof payload>;
export type SignupResult = { status: 'active'; email: string } | { status: 'expired'; email: string };

/**
 * Create the account, wait up to three days for the email to be verified, then
 * welcome the user, or remove the account nobody verified. Each `step.do` runs
 * until it succeeds and is never repeated once it has: a crash, a deploy or a
 * three-day wait in between replays the stored results.
 */
export class SignupWorkflow extends Workflow<SignupPayload, SignupResult> {
	static override readonly type = 'signup';
	static override payload = payload;
	static override events = events;

	async run(step: Step<typeof SignupWorkflow.events>, { email }: SignupPayload): Promise<SignupResult> {
		await step.do('create-account', async () => ({ email, createdAt: new Date().toISOString() }));
		try {
			await step.waitForEvent('email-verified', { timeout: '3 days' });
		} catch (error) {
			if (!(error instanceof EventTimeoutError)) throw error;
			await step.do('remove-unverified-account', async () => ({ removed: email }));
			return { status: 'expired', email };
		}
		await step.do('send-welcome-email', async () => ({ sent: email }), { retries: { limit: 5, delay: '10 seconds', backoff: 'exponential' } });
		return { status: 'active', email };
	}
}
