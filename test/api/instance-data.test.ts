import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import type { ShardflowEnv } from '../../src/client/instance-client';
import { ErrorCode } from '../../src/engine/support/errors';
import { MAX_BUFFERED_EVENT_BYTES } from '../../src/engine/support/limits';
import { PaymentWorkflow } from '../../examples/demo/workflows/payment-workflow';
import { settle, uniqueId } from '../helpers';
import { BigResultsWorkflow, MailboxWorkflow } from '../worker/workflows';
import { api } from './helpers';

const shardflowEnv = env as unknown as ShardflowEnv;
const MB = 1_000_000;

describe('GET /workflows/:id with large step results', () => {
	it('answers 200 when 40 results of 1 MB add up past the 32 MiB RPC limit, and GET /workflows/:id/steps pages every result', async () => {
		const id = uniqueId('big');
		expect(await api('POST', '/workflows', { type: 'big-results', id, payload: { steps: 40, bytes: MB } })).toMatchObject({ status: 201 });
		await settle(id);
		const res = await api('GET', `/workflows/${id}`);
		expect(res.status).toBe(200);
		expect(res.text.length).toBeLessThan(8 * 1024 * 1024);
		expect(res.json).toMatchObject({ status: 'completed', output: 40, stepCounts: { total: 40, completed: 40 }, stepsBefore: 0 });
		expect(res.json.steps.at(-1)).toMatchObject({ name: 's39', result: '39:'.padEnd(MB, 'x') });
		expect(res.json.steps[0]).toMatchObject({ name: 's0', resultOmitted: true });

		const names: string[] = [];
		let cursor: string | null = null;
		do {
			const page = await api('GET', `/workflows/${id}/steps${cursor ? `?cursor=${cursor}` : ''}`);
			expect(page.status).toBe(200);
			for (const step of page.json.items) {
				expect(step.result).toBe(`${step.name.slice(1)}:`.padEnd(MB, 'x'));
				names.push(step.name);
			}
			cursor = page.json.nextCursor;
		} while (cursor);
		expect(names).toHaveLength(40);

		const typed = await BigResultsWorkflow.steps(shardflowEnv, id, { limit: 2 });
		expect(typed.items.map((s) => s.name)).toEqual(['s0', 's1']);
	}, 120_000);

	it.for([
		['cursor=forged', 'INVALID_CURSOR'],
		['limit=0', 'INVALID_QUERY'],
		['limit=101', 'INVALID_QUERY'],
	])('GET /workflows/:id/steps answers 400 to ?%s', async ([query, code]) => {
		const id = uniqueId('big');
		await api('POST', '/workflows', { type: 'big-results', id, payload: { steps: 1, bytes: 1 } });
		expect(await api('GET', `/workflows/${id}/steps?${query}`)).toMatchObject({ status: 400, json: { error: { code } } });
	});

	it('GET /workflows/:id/steps answers 404 for an unknown instance', async () => {
		expect(await api('GET', `/workflows/${uniqueId('ghost')}/steps`)).toMatchObject({ status: 404, json: { error: { code: 'NOT_FOUND' } } });
	});
});

describe('step results JSON would change', () => {
	it('errors the workflow when a step returns a Date, naming the step, without retries', async () => {
		const id = uniqueId('date');
		await api('POST', '/workflows', { type: 'date-step', id });
		await settle(id);
		const res = await api('GET', `/workflows/${id}`);
		expect(res.json).toMatchObject({ status: 'errored', error: { name: 'StepFailedError', code: 'STEP_FAILED' } });
		expect(res.json.error.message).toContain('step "when"');
		expect(res.json.error.message).toContain('Date');
		// The step's own error keeps the code a client matches on.
		expect(res.json.steps[0]).toMatchObject({ name: 'when', status: 'failed', attempts: 1, error: { code: 'NOT_SERIALIZABLE' } });
	});

	it('refuses a Date in a payload sent through the typed helper with NOT_SERIALIZABLE', async () => {
		await expect(
			MailboxWorkflow.create(shardflowEnv, { id: uniqueId('date'), payload: { at: new Date(0) } as never }),
		).rejects.toMatchObject({ code: ErrorCode.NotSerializable });
	});
});

describe('POST /workflows with an existing id', () => {
	const payment = (id: string, amount: number) => ({ type: 'payment', id, payload: { amount, currency: 'EUR' } });

	it('answers 200 for the same payload and 409 PAYLOAD_MISMATCH for another, keeping the stored one', async () => {
		const id = uniqueId('dup');
		expect(await api('POST', '/workflows', payment(id, 10))).toMatchObject({ status: 201 });
		expect(await api('POST', '/workflows', { type: 'payment', id, payload: { currency: 'EUR', amount: 10 } })).toMatchObject({ status: 200 });
		expect(await api('POST', '/workflows', payment(id, 11))).toMatchObject({ status: 409, json: { error: { code: 'PAYLOAD_MISMATCH' } } });
		expect((await api('GET', `/workflows/${id}`)).json.payload).toEqual({ amount: 10, currency: 'EUR' });
	});

	it('refuses another payload through the typed helper too', async () => {
		const id = uniqueId('dup');
		await PaymentWorkflow.create(shardflowEnv, { id, payload: { amount: 1, currency: 'EUR' } });
		await expect(PaymentWorkflow.create(shardflowEnv, { id, payload: { amount: 1, currency: 'EUR' } })).resolves.toMatchObject({ created: false });
		await expect(PaymentWorkflow.create(shardflowEnv, { id, payload: { amount: 2, currency: 'EUR' } })).rejects.toMatchObject({
			code: ErrorCode.PayloadMismatch,
			name: 'PayloadMismatchError',
		});
	});
});

describe('buffered events', () => {
	it('answers 429 EVENT_BUFFER_FULL past 16 MiB of buffered events, and drops them (counted in the status) on terminate', async () => {
		const id = uniqueId('mailbox');
		await api('POST', '/workflows', { type: 'mailbox', id });
		await settle(id);
		const body = { data: 'x'.repeat(MB) };
		const fits = Math.floor(MAX_BUFFERED_EVENT_BYTES / (MB + 11));
		for (let i = 0; i < fits; i++) expect((await api('POST', `/workflows/${id}/events/blob`, body)).status).toBe(202);
		expect(await api('POST', `/workflows/${id}/events/blob`, body)).toMatchObject({ status: 429, json: { error: { code: 'EVENT_BUFFER_FULL' } } });
		expect((await api('GET', `/workflows/${id}`)).json).toMatchObject({ bufferedEvents: fits, droppedEvents: 0 });
		await api('POST', `/workflows/${id}/terminate`);
		expect((await api('GET', `/workflows/${id}`)).json).toMatchObject({ status: 'terminated', bufferedEvents: 0, droppedEvents: fits });
	}, 120_000);
});

describe('POST /workflows/:id/events/:name with Idempotency-Key', () => {
	it('accepts a key once and answers a retry the same way, even after the event was consumed', async () => {
		const id = uniqueId('idem');
		await api('POST', '/workflows', { type: 'mailbox', id });
		await settle(id);
		const send = (event: string, body: unknown, key: string) => api('POST', `/workflows/${id}/events/${event}`, body, { 'idempotency-key': key });
		expect(await send('blob', { data: 'a' }, 'k-1')).toMatchObject({ status: 202, json: { id, event: 'blob', accepted: true } });
		expect(await send('blob', { data: 'a' }, 'k-1')).toMatchObject({ status: 202, json: { id, event: 'blob', accepted: true } });
		expect((await api('GET', `/workflows/${id}`)).json.bufferedEvents).toBe(1);
		expect(await send('blob', { data: 'b' }, 'k-1')).toMatchObject({ status: 422, json: { error: { code: 'IDEMPOTENCY_KEY_REUSED' } } });
		expect(await send('blob', { data: 'a' }, 'has space')).toMatchObject({ status: 400, json: { error: { code: 'INVALID_IDEMPOTENCY_KEY' } } });
		expect(await send('done', {}, 'k-done')).toMatchObject({ status: 202 });
		await settle(id);
		// Completed now: a retry of an accepted send is still 202, a new event 409.
		expect(await send('done', {}, 'k-done')).toMatchObject({ status: 202 });
		expect(await send('done', {}, 'k-new')).toMatchObject({ status: 409, json: { error: { code: 'INVALID_STATE' } } });
	});

	it('takes the key as the idempotencyKey option of the typed sendEvent', async () => {
		const id = uniqueId('idem');
		await MailboxWorkflow.create(shardflowEnv, { id, payload: {} });
		await settle(id);
		for (let i = 0; i < 3; i++) await MailboxWorkflow.sendEvent(shardflowEnv, { id, event: 'blob', payload: { data: 'a' }, idempotencyKey: 'once' });
		expect((await MailboxWorkflow.status(shardflowEnv, id)).bufferedEvents).toBe(1);
		await expect(
			MailboxWorkflow.sendEvent(shardflowEnv, { id, event: 'blob', payload: { data: 'b' }, idempotencyKey: 'once' }),
		).rejects.toMatchObject({ code: ErrorCode.IdempotencyKeyReused });
	});
});
