import { describe, expect, it } from 'vitest';
import { MAX_BATCH_DELETE } from '../../src/client/delete-batch';
import { settle, testEnv, uniqueId } from '../helpers';
import { ShortLivedWorkflow } from '../worker/workflows';
import { api } from './helpers';

async function finished(): Promise<string> {
	const id = uniqueId('batch-delete');
	await api('POST', '/workflows', { type: 'short-lived', id, payload: { n: 1 } });
	await settle(id);
	return id;
}

// Cloudflare: binding.test.ts "deleteBatch()": "should delete instances and wipe their stored state",
// "should report each duplicate missing ... ID", "should reject invalid batches".
describe('POST /workflows/batch-delete', () => {
	it('deletes every id and answers each like a single DELETE: deleted, or refused with its status and code', async () => {
		const [a, b] = [await finished(), await finished()];
		const missing = uniqueId('never-created');
		const response = await api('POST', '/workflows/batch-delete', { ids: [a, missing, b, missing] });
		expect(response.status).toBe(200);
		expect(response.json.items).toEqual([
			{ result: 'deleted', status: 200, id: a },
			{ result: 'refused', status: 404, id: missing, error: { code: 'NOT_FOUND', message: expect.any(String) } },
			{ result: 'deleted', status: 200, id: b },
			{ result: 'refused', status: 404, id: missing, error: { code: 'NOT_FOUND', message: expect.any(String) } },
		]);
		expect((await api('GET', `/workflows/${a}`)).status).toBe(404);
		expect((await api('GET', `/workflows/${b}`)).status).toBe(404);
	});

	it('refuses a running instance with 409 unless terminate is true', async () => {
		const id = uniqueId('batch-delete-running');
		await api('POST', '/workflows', { type: 'redeployed', id, payload: {} }); // waits for its approval
		await settle(id);
		expect((await api('POST', '/workflows/batch-delete', { ids: [id] })).json.items).toMatchObject([{ result: 'refused', status: 409, error: { code: 'INVALID_STATE' } }]);
		expect((await api('POST', '/workflows/batch-delete', { ids: [id], terminate: true })).json.items).toEqual([{ result: 'deleted', status: 200, id }]);
	});

	it.for([
		['an empty batch', { ids: [] }],
		[`more than ${MAX_BATCH_DELETE} ids`, { ids: Array.from({ length: MAX_BATCH_DELETE + 1 }, (_, i) => `too-many-${i}`) }],
		['an empty id', { ids: [''] }],
		['ids that are not an array', { ids: 'pay-1' }],
		['an unknown field', { ids: ['pay-1'], terminat: true }],
		['a terminate that is not a boolean', { ids: ['pay-1'], terminate: 'yes' }],
	] as const)('answers %s with a 400 INVALID_REQUEST and deletes nothing', async ([, body]) => {
		const response = await api('POST', '/workflows/batch-delete', body);
		expect(response.status).toBe(400);
		expect(response.json.error.code).toBe('INVALID_REQUEST');
	});
});

describe('deleteBatch', () => {
	it('the typed helper deletes by id and answers in order', async () => {
		const [a, b] = [await finished(), await finished()];
		expect(await ShortLivedWorkflow.deleteBatch(testEnv, [a, b])).toEqual([
			{ result: 'deleted', id: a },
			{ result: 'deleted', id: b },
		]);
		expect((await api('GET', `/workflows/${a}`)).status).toBe(404);
	});
});
