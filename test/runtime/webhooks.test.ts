import { abortAllDurableObjects, evictDurableObject } from 'cloudflare:test';
import { afterEach, describe, expect, it } from 'vitest';
import { instances } from '../../src/client/instance-client';
import { api, apiWith } from '../api/helpers';
import { advanceClock, fireAlarm, resetClock, settle, stub, testEnv, uniqueId } from '../helpers';
import { executions } from '../worker/probes';

afterEach(resetClock);

/** Starts an instance that sent its webhook URL out and now waits; returns the URL's path. */
async function waitingHook(payload: { timeout?: string } = {}) {
	const id = uniqueId('hook');
	await instances.create(testEnv, { type: 'hook-approval', id, payload });
	await settle(id);
	const status = await instances.status(testEnv, { id });
	expect(status.status).toBe('waiting');
	const url = status.webhooks?.[0]?.url;
	expect(url).toMatch(/^\/webhooks\/[\w-]+\.[\w-]{43}$/); // no PUBLIC_URL in the test Worker: a path
	return { id, path: url! };
}

const post = (path: string, body: unknown) => api('POST', path, body);

describe('one-shot webhooks over HTTP', () => {
	it('an outside system with no API token POSTs the URL once and the wait returns its JSON body', async () => {
		const { id, path } = await waitingHook();
		// A production deployment with an API token: the API refuses a caller without it, the webhook does not.
		const locked = { API_TOKEN: 's3cret', SHARDFLOW_ENV: 'production' };
		expect((await apiWith(locked, 'GET', `/workflows/${id}`)).status).toBe(401);
		const response = await apiWith(locked, 'POST', path, { body: JSON.stringify({ approved: true }), headers: { 'content-type': 'application/json' } });
		expect(response).toEqual({ status: 200, json: { received: true } });
		await settle(id);
		expect(await instances.status(testEnv, { id })).toMatchObject({ status: 'completed', output: { body: { approved: true } } });
		expect(executions.get(`${id}:send`)).toBe(1);
	});

	it('refuses a second use with 409 WEBHOOK_USED and changes nothing', async () => {
		const { id, path } = await waitingHook();
		expect((await post(path, { n: 1 })).status).toBe(200);
		await settle(id);
		const second = await post(path, { n: 2 });
		expect(second.status).toBe(409);
		expect(second.json).toMatchObject({ error: { code: 'WEBHOOK_USED' } });
		expect((await instances.status(testEnv, { id })).output).toEqual({ body: { n: 1 } });
	});

	it('refuses a forged or altered token with 403 WEBHOOK_INVALID and changes nothing', async () => {
		const { id, path } = await waitingHook();
		const [body, signature] = path.slice('/webhooks/'.length).split('.') as [string, string];
		for (const forged of [`/webhooks/${body}.${'A'.repeat(43)}`, `/webhooks/${body.slice(0, -3)}abc.${signature}`, '/webhooks/not-a-token']) {
			const response = await post(forged, { approved: true });
			expect(response.status).toBe(403);
			expect(response.json).toMatchObject({ error: { code: 'WEBHOOK_INVALID' } });
		}
		expect((await instances.status(testEnv, { id })).status).toBe('waiting');
	});

	it('refuses a use after the timeout with 410 WEBHOOK_EXPIRED, and the wait ends with the expiry', async () => {
		const { id, path } = await waitingHook({ timeout: '1 hour' });
		advanceClock(3_600_000);
		const late = await post(path, { approved: true });
		expect(late.status).toBe(410);
		expect(late.json).toMatchObject({ error: { code: 'WEBHOOK_EXPIRED' } });
		await fireAlarm(id);
		expect(await instances.status(testEnv, { id })).toMatchObject({ status: 'completed', output: 'expired' });
	});

	it('refuses a body that is not JSON with 400 and keeps the webhook usable', async () => {
		const { id, path } = await waitingHook();
		const bad = await api('POST', path, '{"approved": tru', { 'content-type': 'application/json' });
		expect(bad.status).toBe(400);
		expect(bad.json).toMatchObject({ error: { code: 'INVALID_PAYLOAD' } });
		expect((await post(path, { approved: false })).status).toBe(200);
		await settle(id);
		expect((await instances.status(testEnv, { id })).output).toEqual({ body: { approved: false } });
	});

	it('refuses a body nested 5,000 levels deep with 400 (not a 500) and keeps the webhook usable', async () => {
		const { id, path } = await waitingHook();
		const deep = '['.repeat(5000) + ']'.repeat(5000);
		const refused = await api('POST', path, deep, { 'content-type': 'application/json' });
		expect(refused.status).toBe(400);
		expect(refused.json).toMatchObject({ error: { code: 'NOT_SERIALIZABLE' } });
		expect((await post(path, { approved: true })).status).toBe(200);
		await settle(id);
		expect((await instances.status(testEnv, { id })).output).toEqual({ body: { approved: true } });
	});

	it('answers what is wrong with the URL before what is wrong with the body: used 409, expired 410, deleted 404, then 400', async () => {
		const notJson = (path: string) => api('POST', path, 'not json', { 'content-type': 'application/json' });
		const used = await waitingHook();
		expect((await post(used.path, { ok: true })).status).toBe(200);
		await settle(used.id);
		// Used, and its instance has finished since: the URL's own state (used) is the answer, whatever the body.
		expect((await notJson(used.path)).json).toMatchObject({ error: { code: 'WEBHOOK_USED' } });
		expect((await post(used.path, { ok: true })).status).toBe(409);

		const expired = await waitingHook({ timeout: '1 minute' });
		advanceClock(2 * 60_000);
		const late = await notJson(expired.path);
		expect(late.status).toBe(410);
		expect(late.json).toMatchObject({ error: { code: 'WEBHOOK_EXPIRED' } });
		resetClock();

		const deleted = await waitingHook();
		await instances.terminate(testEnv, { id: deleted.id });
		await settle(deleted.id);
		expect((await api('DELETE', `/workflows/${deleted.id}`)).status).toBeLessThan(300);
		const gone = await notJson(deleted.path);
		expect(gone.status).toBe(404);

		const fresh = await waitingHook();
		expect((await notJson(fresh.path)).json).toMatchObject({ error: { code: 'INVALID_PAYLOAD' } });
	});

	it('refuses a body over the event payload limit with 413', async () => {
		const { path } = await waitingHook();
		const response = await post(path, { blob: 'x'.repeat(1024 * 1024 + 10) });
		expect(response.status).toBe(413);
		expect(response.json).toMatchObject({ error: { code: 'TOO_LARGE' } });
	});

	it('works after an eviction and after kill -9: the URL and its single use are durable', async () => {
		const { id, path } = await waitingHook();
		await evictDurableObject(stub(id));
		await abortAllDurableObjects();
		expect((await post(path, { approved: true })).status).toBe(200);
		await abortAllDurableObjects(); // the body is durable once the POST was answered
		await fireAlarm(id);
		await settle(id);
		expect(await instances.status(testEnv, { id })).toMatchObject({ status: 'completed', output: { body: { approved: true } } });
		expect((await post(path, { approved: false })).status).toBe(409);
		expect(executions.get(`${id}:send`)).toBe(1);
	});
});
