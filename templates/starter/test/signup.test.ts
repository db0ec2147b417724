// On plain Node: the pure engine, an in-memory store and a virtual clock (three days take milliseconds).
import { expect, it } from 'vitest';
import { testWorkflow } from 'shardflow/testing';
import { registry } from '../src/registry';
import { SignupWorkflow } from '../src/workflows/signup';

it('activates the account once the email is verified', async () => {
	const signup = testWorkflow(SignupWorkflow, { registry });
	await signup.start({ email: 'ada@example.com' });
	await signup.sendEvent('email-verified', { verifiedAt: '2030-01-01T10:00:00Z' });
	expect(await signup.output()).toEqual({ status: 'active', email: 'ada@example.com' });
});

it('removes an account nobody verified within three days', async () => {
	const signup = testWorkflow(SignupWorkflow, { registry });
	await signup.start({ email: 'bob@example.com' });
	await signup.clock.advance('3 days');
	expect(await signup.output()).toEqual({ status: 'expired', email: 'bob@example.com' });
	expect((await signup.steps()).map((s) => s.name)).toContain('remove-unverified-account');
});

it('retries the welcome email until the mail service answers', async () => {
	const signup = testWorkflow(SignupWorkflow, { registry }).mockStepError('send-welcome-email', new Error('mail service down'), { times: 2 }).disableRetryDelays();
	await signup.start({ email: 'cy@example.com' });
	await signup.sendEvent('email-verified', { verifiedAt: '2030-01-01T10:00:00Z' });
	expect(await signup.output()).toMatchObject({ status: 'active' });
});
