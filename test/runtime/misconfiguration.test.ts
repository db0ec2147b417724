import { env } from 'cloudflare:workers';
import { describe, expect, it, vi } from 'vitest';
import { createApp, type ApiEnv } from '../../src/host';
import { ConfigurationError, instances, type ShardflowEnv } from '../../src/client';
import { TestWorkflow } from '../../examples/demo/workflows/test-workflow';
import { testRegistry } from '../worker/index';
import { uniqueId } from '../helpers';

// A deployment whose wrangler.jsonc lacks what shardflow needs answers every call with a typed
// MISCONFIGURED error that says what to change, never a bare TypeError or "internal error".

const kvRunner = (env as unknown as { KV_RUNNER: ShardflowEnv['WORKFLOW_RUNNER'] }).KV_RUNNER;

describe('a deployment without what shardflow needs', () => {
	it('refuses every call to a WorkflowRunner class without SQLite storage with MISCONFIGURED naming new_sqlite_classes, over RPC and HTTP', async () => {
		const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
		try {
			const misdeployed = { WORKFLOW_RUNNER: kvRunner } as ShardflowEnv;
			const created = instances.create(misdeployed, { type: 'test', id: uniqueId('kv'), payload: { name: 'x' } });
			await expect(created).rejects.toBeInstanceOf(ConfigurationError);
			await expect(created).rejects.toMatchObject({ code: 'MISCONFIGURED', message: expect.stringContaining('"new_sqlite_classes": ["WorkflowRunner"]') });
			const app = createApp(testRegistry);
			const response = await app.request('/workflows', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ type: 'test', payload: { name: 'x' } }) }, { ...(env as unknown as ApiEnv), WORKFLOW_RUNNER: kvRunner } as ApiEnv);
			expect(response.status).toBe(500);
			expect(((await response.json()) as { error: { code: string } }).error.code).toBe('MISCONFIGURED');
		} finally {
			logged.mockRestore();
		}
	});

	it('refuses a call from a Worker without the WORKFLOW_RUNNER binding with MISCONFIGURED naming the binding, from the static helpers and over HTTP', async () => {
		const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
		try {
			const unbound = {} as ShardflowEnv;
			await expect(TestWorkflow.create(unbound, { payload: { name: 'x' } })).rejects.toMatchObject({ name: 'ConfigurationError', code: 'MISCONFIGURED', message: expect.stringContaining('no WORKFLOW_RUNNER binding') });
			await expect(TestWorkflow.status(unbound, 'some-id')).rejects.toBeInstanceOf(ConfigurationError);
			const app = createApp(testRegistry);
			const { WORKFLOW_RUNNER: _binding, ...rest } = env as unknown as ApiEnv & Record<string, unknown>;
			for (const [method, path] of [['GET', '/workflows/some-id'], ['POST', '/workflows'], ['GET', '/workflows?type=test']] as const) {
				const response = await app.request(path, { method, headers: { 'content-type': 'application/json' }, ...(method === 'POST' ? { body: JSON.stringify({ type: 'test', payload: { name: 'x' } }) } : {}) }, rest as unknown as ApiEnv);
				expect(response.status, `${method} ${path}`).toBe(500);
				const body = (await response.json()) as { error: { code: string; message: string } };
				expect(body.error).toMatchObject({ code: 'MISCONFIGURED', message: expect.stringContaining('WORKFLOW_RUNNER') });
			}
		} finally {
			logged.mockRestore();
		}
	});
});
