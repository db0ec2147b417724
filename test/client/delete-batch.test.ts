import { describe, expect, it } from 'vitest';
import { BATCH_DELETE_CONCURRENCY, deleteBatch, MAX_BATCH_DELETE } from '../../src/client/delete-batch';
import type { ShardflowEnv } from '../../src/client/instance-client';

/** A namespace whose objects answer `deleteInstance` after a turn of the event loop; `live` ids exist once. */
function namespace(live: Set<string>, fail: (id: string) => boolean = () => false) {
	const seen = { inFlight: 0, maxInFlight: 0, calls: [] as { id: string; terminate?: boolean; archive?: boolean }[] };
	const env = {
		WORKFLOW_RUNNER: {
			idFromName: (name: string) => name,
			get: (id: string) => ({
				deleteInstance: async (input: { id: string; terminate?: boolean; archive?: boolean }) => {
					seen.calls.push(input);
					seen.maxInFlight = Math.max(seen.maxInFlight, ++seen.inFlight);
					await new Promise((resolve) => setTimeout(resolve, 2));
					seen.inFlight--;
					if (fail(id)) throw new Error('sensitive failure');
					if (!live.delete(id)) return { ok: false, error: { code: 'NOT_FOUND', message: `workflow "${id}" not found` } };
					return { ok: true, value: { id, deleted: true } };
				},
			}),
		},
	} as unknown as ShardflowEnv;
	return { env, seen };
}

const ids = (n: number) => Array.from({ length: n }, (_, i) => `pay-${i}`);

// Cloudflare: binding.test.ts "deleteBatch()".
describe('deleteBatch', () => {
	it('deletes every id, answering each in order', async () => {
		const { env } = namespace(new Set(['pay-0', 'pay-1']));
		expect(await deleteBatch(env, ['pay-0', 'pay-1'])).toEqual([
			{ result: 'deleted', id: 'pay-0' },
			{ result: 'deleted', id: 'pay-1' },
		]);
	});

	it('answers an unknown id, and each repeat of an id, as refused with its code, and deletes the others', async () => {
		const { env } = namespace(new Set(['pay-1']));
		expect(await deleteBatch(env, ['missing', 'pay-1', 'missing'])).toMatchObject([
			{ result: 'refused', id: 'missing', error: { code: 'NOT_FOUND' } },
			{ result: 'deleted', id: 'pay-1' },
			{ result: 'refused', id: 'missing', error: { code: 'NOT_FOUND' } },
		]);
	});

	it('answers an unexpected failure as INTERNAL without its message', async () => {
		const { env } = namespace(new Set(['broken']), (id) => id === 'broken');
		expect(await deleteBatch(env, ['broken'])).toEqual([{ result: 'refused', id: 'broken', error: { code: 'INTERNAL', message: 'internal error' } }]);
	});

	it('passes terminate and archive to every delete', async () => {
		const { env, seen } = namespace(new Set(['pay-0']));
		await deleteBatch(env, ['pay-0'], { terminate: true, archive: false });
		expect(seen.calls).toEqual([{ id: 'pay-0', terminate: true, archive: false }]);
	});

	it(`runs the deletes concurrently, never more than ${BATCH_DELETE_CONCURRENCY} at a time`, async () => {
		const { env, seen } = namespace(new Set(ids(100)));
		const outcomes = await deleteBatch(env, ids(100));
		expect(outcomes.every((o) => o.result === 'deleted')).toBe(true);
		expect(seen.maxInFlight).toBe(BATCH_DELETE_CONCURRENCY);
	});

	it.for([
		['an empty batch', []],
		[`more than ${MAX_BATCH_DELETE} ids`, ids(MAX_BATCH_DELETE + 1)],
		['an empty id', ['pay-0', '']],
		['an id that is not a string', ['pay-0', 7]],
		['an object, not an array', { ids: ['pay-0'] }],
	] as const)('refuses %s with INVALID_OPTIONS before deleting anything', async ([, batch]) => {
		const { env, seen } = namespace(new Set(['pay-0']));
		await expect(deleteBatch(env, batch as never)).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
		expect(seen.calls).toHaveLength(0);
	});
});
