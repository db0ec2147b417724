import { env } from 'cloudflare:workers';
import { describe, expect, it, vi } from 'vitest';
import { createApp, defineRegistry, type ApiEnv } from '../../src/host';
import { TestWorkflow } from '../../examples/demo/workflows/test-workflow';
import { Workflow } from '../../src/authoring';

describe('the API of a registry that cannot run', () => {
	it('logs the problem when built and answers every route 500 INVALID_REGISTRY naming the key and the static type', async () => {
		const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
		// A key that differs from the class's static type ("test"), as JavaScript or a cast can write it.
		const app = createApp(defineRegistry({ greeting: { workflow: TestWorkflow } } as never));
		expect(logged).toHaveBeenCalledWith(expect.objectContaining({ level: 'error', event: 'registry.invalid', errorCode: 'INVALID_REGISTRY', msg: expect.stringContaining('registry key "greeting" holds class TestWorkflow, whose static type is "test"') }));
		logged.mockRestore();
		for (const [method, path] of [['GET', '/workflows'], ['POST', '/workflows'], ['GET', '/openapi.json'], ['GET', '/types']] as const) {
			const response = await app.request(path, { method }, env as unknown as ApiEnv);
			expect(response.status).toBe(500);
			const body = (await response.json()) as { error: { code: string; message: string } };
			expect(body.error.code).toBe('INVALID_REGISTRY');
			expect(body.error.message).toContain('registry key "greeting" holds class TestWorkflow, whose static type is "test"');
		}
	});

	it.for([
		['a cron that is no cron', { schedule: { cron: '61 * * * *' } }, 'is not a cron expression'],
		['a concurrency limit of 0', { concurrency: { limit: 0 } }, 'limit must be a whole number from 1 to 1000'],
	] as const)('answers 500 INVALID_REGISTRY for %s instead of failing the Worker at start-up', async ([, statics, message]) => {
		class Broken extends Workflow<{}, void> {
			static override readonly type = 'broken';
			async run() {}
		}
		Object.assign(Broken, statics);
		const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
		const app = createApp(defineRegistry({ broken: { workflow: Broken } }));
		logged.mockRestore();
		const response = await app.request('/workflows', { method: 'GET' }, env as unknown as ApiEnv);
		expect(response.status).toBe(500);
		const body = (await response.json()) as { error: { code: string; message: string } };
		expect(body.error).toMatchObject({ code: 'INVALID_REGISTRY' });
		expect(body.error.message).toContain(message);
	});
});
