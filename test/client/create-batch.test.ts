import { describe, expect, it } from 'vitest';
import { BATCH_CREATE_CONCURRENCY, createBatch } from '../../src/client/create-batch';
import type { ShardflowEnv } from '../../src/client/instance-client';

/** A namespace whose objects answer `create` after a turn of the event loop, counting the calls in flight. */
function slowNamespace(refuse: (id: string) => boolean = () => false) {
	const seen = { inFlight: 0, maxInFlight: 0, calls: 0 };
	const env = {
		WORKFLOW_RUNNER: {
			idFromName: (name: string) => name,
			get: (id: string) => ({
				create: async (input: { id: string; type: string }) => {
					seen.calls++;
					seen.maxInFlight = Math.max(seen.maxInFlight, ++seen.inFlight);
					await new Promise((resolve) => setTimeout(resolve, 2));
					seen.inFlight--;
					if (refuse(id)) return { ok: false, error: { code: 'PAYLOAD_MISMATCH', message: 'another payload' } };
					return { ok: true, value: { id: input.id, type: input.type, status: 'created', created: true } };
				},
			}),
		},
	} as unknown as ShardflowEnv;
	return { env, seen };
}

const items = (n: number) => Array.from({ length: n }, (_, i) => ({ type: 'payment', id: `pay-${i}`, payload: { i } }));

describe('createBatch', () => {
	it(`runs the creates concurrently, never more than ${BATCH_CREATE_CONCURRENCY} at a time`, async () => {
		const { env, seen } = slowNamespace();
		const outcomes = await createBatch(env, items(100));
		expect(seen.calls).toBe(100);
		expect(seen.maxInFlight).toBe(BATCH_CREATE_CONCURRENCY);
		expect(outcomes.map((o) => o.id)).toEqual(items(100).map((i) => i.id));
	});

	it('answers a refused item with its error and still creates the others', async () => {
		const { env } = slowNamespace((id) => id === 'pay-1');
		const outcomes = await createBatch(env, items(3));
		expect(outcomes).toMatchObject([
			{ result: 'created', id: 'pay-0' },
			{ result: 'refused', id: 'pay-1', error: { code: 'PAYLOAD_MISMATCH' } },
			{ result: 'created', id: 'pay-2' },
		]);
	});

	it.for([['an empty batch', []], ['101 items', items(101)], ['an object, not an array', {}]] as const)('refuses %s with INVALID_OPTIONS before calling any object', async ([, batch]) => {
		const { env, seen } = slowNamespace();
		await expect(createBatch(env, batch as never)).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
		expect(seen.calls).toBe(0);
	});

	it.for([
		['an item without a type', [{ type: 'payment', id: 'pay-0', payload: {} }, { id: 'pay-1', payload: {} }]],
		['a null item', [{ type: 'payment', id: 'pay-0', payload: {} }, null]],
		['an item whose id is not a string', [{ type: 'payment', id: 'pay-0', payload: {} }, { type: 'payment', id: 7, payload: {} }]],
	] as const)('refuses a batch with %s with INVALID_OPTIONS and creates nothing', async ([, batch]) => {
		const { env, seen } = slowNamespace();
		await expect(createBatch(env, batch as never)).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
		expect(seen.calls).toBe(0);
	});
});
