import { abortAllDurableObjects, runInDurableObject } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { afterEach, describe, expect, it } from 'vitest';
import { PaymentWorkflow } from '../../examples/demo/workflows/payment-workflow';
import { KV } from '../../src/runtime/compact-keys';
import { storageSettingsOf } from '../../src/runtime/storage-format';
import { storageLayoutOf } from '../../src/runtime/storage-layout';
import { api } from '../api/helpers';
import { settle, stub, testEnv, uniqueId } from '../helpers';
import { hasTable } from '../stored-parts';
import { layoutSettings } from '../worker/probes';

afterEach(() => layoutSettings.clear());

/** The layout an object holds: tables, the compact instance record, or nothing. */
const layoutOf = (id: string) =>
	runInDurableObject(stub(id), (_, state) => (hasTable(state.storage, '__drizzle_migrations') ? 'table' : state.storage.kv.get(KV.instance) !== undefined ? 'compact' : 'none'));

describe('storage layouts (SHARDFLOW_STORAGE_LAYOUT)', () => {
	it.each([
		['table', 'compact'],
		['compact', 'table'],
	] as const)('keeps an instance created in the %s layout in it, and running, after a deploy that sets %s', async (from, to) => {
		const id = uniqueId(`flip-${from}`);
		layoutSettings.set(id, from);
		await PaymentWorkflow.create(testEnv, { id, payload: { amount: 42, currency: 'EUR' } });
		await settle(id);
		expect((await PaymentWorkflow.status(testEnv, id)).status).toBe('waiting');
		expect(await layoutOf(id)).toBe(from);
		// The deploy: every object starts again under the other setting.
		await abortAllDurableObjects();
		layoutSettings.set(id, to);
		await PaymentWorkflow.sendEvent(testEnv, { id, event: 'approval', payload: { approved: true, reviewer: 'alice' } });
		await settle(id);
		const status = await PaymentWorkflow.status(testEnv, id);
		expect(status.status).toBe('completed');
		expect(status.output).toEqual({ status: 'charged', amount: 42, currency: 'EUR', reviewer: 'alice' });
		expect(await layoutOf(id)).toBe(from);
		// Its whole history, one record per seq from the first, across the two builds.
		const history = (await api('GET', `/workflows/${id}/history?limit=100`)).json as { events: { seq: number; kind: string }[] };
		expect(history.events.map((e) => e.seq)).toEqual(history.events.map((_, i) => i + 1));
		expect(history.events[0]!.kind).toBe('workflow.created');
		expect(history.events.at(-1)!.kind).toBe('workflow.completed');
	});

	it('gives a new instance the layout the Worker names (wrangler.jsonc: storage format 4, compact; SHARDFLOW_STORAGE_LAYOUT=table npx vitest, the table one)', async () => {
		const id = uniqueId('layout-default');
		await PaymentWorkflow.create(testEnv, { id, payload: { amount: 1, currency: 'EUR' } });
		await settle(id);
		expect(await layoutOf(id)).toBe(storageSettingsOf(env as Parameters<typeof storageSettingsOf>[0]).layout);
	});

	it('reads the setting: compact, table, unset; anything else is the table layout', () => {
		expect([storageLayoutOf({ SHARDFLOW_STORAGE_LAYOUT: 'compact' }), storageLayoutOf({ SHARDFLOW_STORAGE_LAYOUT: 'table' }), storageLayoutOf({}), storageLayoutOf({ SHARDFLOW_STORAGE_LAYOUT: 'kv' })]).toEqual([
			'compact',
			'table',
			'table',
			'table',
		]);
	});
});
