// Inside workerd (@cloudflare/vitest-plugin): the real WorkflowRunner and its SQLite storage.
import { env } from 'cloudflare:workers';
import { SELF } from 'cloudflare:test';
import { afterEach, expect, it } from 'vitest';
import { introspectWorkflow, testKitClock, testWorkflow } from 'shardflow/testing/workerd';
import { SignupWorkflow } from '../src/workflows/signup';

afterEach(() => testKitClock.reset());

it('removes an account nobody verified within three days, in workerd', async () => {
	const signup = testWorkflow(SignupWorkflow, { env });
	await signup.start({ email: 'dee@example.com' });
	await signup.clock.advance('3 days');
	expect(await signup.output()).toEqual({ status: 'expired', email: 'dee@example.com' });
});

it('starts a signup over the REST API and activates it with an event', async () => {
	const signups = await introspectWorkflow(SignupWorkflow, { env });
	const created = await SELF.fetch('https://example.test/workflows', {
		method: 'POST',
		headers: { 'content-type': 'application/json' },
		body: JSON.stringify({ type: 'signup', payload: { email: 'eve@example.com' } }),
	});
	expect(created.status).toBe(201);
	const [signup] = await signups.get();
	await signup!.sendEvent('email-verified', { verifiedAt: '2030-01-01T10:00:00Z' });
	expect(await signup!.output()).toEqual({ status: 'active', email: 'eve@example.com' });
	await signups.dispose();
});

it('refuses a payload that is not an email with a 400', async () => {
	const res = await SELF.fetch('https://example.test/workflows', {
		method: 'POST',
		headers: { 'content-type': 'application/json' },
		body: JSON.stringify({ type: 'signup', payload: { email: 'not an email' } }),
	});
	expect(res.status).toBe(400);
});
