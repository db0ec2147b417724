import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { PaymentWorkflow } from '../../examples/demo/workflows/payment-workflow';
import { advanceClock, fireAlarm, settle, uniqueId } from '../helpers';
import { api } from './helpers';

const payment = (id: string) => ({ type: 'payment', id, payload: { amount: 12, currency: 'EUR' } });

describe('GET /workflows/:id/history', () => {
	it('returns the history in sequence order: created, steps, the event and its consumption, completed', async () => {
		const id = uniqueId('hist');
		await api('POST', '/workflows', payment(id));
		await settle(id);
		await api('POST', `/workflows/${id}/events/approval`, { approved: true, reviewer: 'ann' });
		await settle(id);
		const res = await api('GET', `/workflows/${id}/history`);
		expect(res.status).toBe(200);
		expect(res.json).toMatchObject({ id, type: 'payment', generation: 0, formatVersion: 1, nextCursor: null });
		const events = res.json.events as { seq: number; kind: string; step?: string }[];
		expect(events[0]).toMatchObject({ seq: 1, kind: 'workflow.created', payload: { amount: 12, currency: 'EUR' } });
		expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
		expect(events.map((e) => e.kind)).toContain('wait.started');
		expect(events.find((e) => e.kind === 'event.received')).toMatchObject({ event: 'approval', payload: { approved: true, reviewer: 'ann' } });
		expect(events.find((e) => e.kind === 'event.consumed')).toMatchObject({ step: 'approval', payload: { approved: true, reviewer: 'ann' } });
		expect(events.at(-1)).toMatchObject({ kind: 'workflow.completed' });
		const status = (await api('GET', `/workflows/${id}`)).json;
		expect(events.filter((e) => e.kind === 'step.completed').map((e) => e.step)).toEqual(
			status.steps.filter((s: { kind: string }) => s.kind === 'do').map((s: { name: string }) => s.name),
		);
	});

	it('pages with after and limit, and after the last record returns only what came later', async () => {
		const id = uniqueId('hist-page');
		await api('POST', '/workflows', payment(id));
		await settle(id);
		const first = await api('GET', `/workflows/${id}/history?limit=2`);
		expect(first.json.events).toHaveLength(2);
		expect(first.json.nextCursor).toBe('2');
		const rest = await api('GET', `/workflows/${id}/history?after=${first.json.nextCursor}`);
		expect(rest.json.events[0].seq).toBe(3);
		const last = rest.json.events.at(-1).seq as number;
		expect(rest.json.nextCursor).toBeNull();
		await api('POST', `/workflows/${id}/events/approval`, { approved: false, reviewer: 'ann' });
		await settle(id);
		const newer = await api('GET', `/workflows/${id}/history?after=${last}`);
		expect(newer.json.events[0]).toMatchObject({ seq: last + 1, kind: 'event.received' });
	});

	it('reads an earlier generation after a restart', async () => {
		const id = uniqueId('hist-gen');
		await api('POST', '/workflows', { type: 'test', id, payload: { name: 'Gen' } });
		await settle(id);
		advanceClock(1000);
		await fireAlarm(id);
		expect(await api('POST', `/workflows/${id}/restart`)).toMatchObject({ status: 200 });
		await settle(id);
		const current = await api('GET', `/workflows/${id}/history`);
		expect(current.json.generation).toBe(1);
		expect(current.json.events[0]).toMatchObject({ kind: 'workflow.restarted', previousGeneration: 0, generation: 1 });
		const old = await api('GET', `/workflows/${id}/history?generation=0`);
		expect(old.json.events.at(-1)).toMatchObject({ kind: 'workflow.completed', generation: 0 });
	});

	it.for([
		['?limit=0', 400, 'INVALID_QUERY'],
		['?limit=1001', 400, 'INVALID_QUERY'],
		['?limit=abc', 400, 'INVALID_QUERY'],
		['?after=-3', 400, 'INVALID_CURSOR'],
		['?after=abc', 400, 'INVALID_CURSOR'],
		['?generation=7', 400, 'INVALID_QUERY'],
		['?generation=x', 400, 'INVALID_QUERY'],
	] as const)('refuses %s with %i %s', async ([query, status, code]) => {
		const id = uniqueId('hist-bad');
		await api('POST', '/workflows', payment(id));
		expect(await api('GET', `/workflows/${id}/history${query}`)).toMatchObject({ status, json: { error: { code } } });
	});

	it('answers 404 for an unknown instance', async () => {
		expect(await api('GET', `/workflows/${uniqueId('ghost')}/history`)).toMatchObject({ status: 404, json: { error: { code: 'NOT_FOUND' } } });
	});
});

describe('Workflow.history', () => {
	it('returns the same page through the typed helper', async () => {
		const id = uniqueId('hist-helper');
		await PaymentWorkflow.create(env as never, { id, payload: { amount: 3, currency: 'EUR' } });
		await settle(id);
		const page = await PaymentWorkflow.history(env as never, id, { limit: 3 });
		expect(page).toMatchObject({ id, type: 'payment', formatVersion: 1 });
		expect(page.events.map((e) => e.kind).slice(0, 1)).toEqual(['workflow.created']);
		expect(page.events).toHaveLength(3);
	});
});
