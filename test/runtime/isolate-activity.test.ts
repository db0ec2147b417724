import { describe, expect, it } from 'vitest';
import { instances } from '../../src/client/instance-client';
import { workBegunCount } from '../../src/runtime/isolate-activity';
import { stub, testEnv, uniqueId } from '../helpers';

describe('what counts as other work of the isolate (a long run gives way to it)', () => {
	it("counts a caller's call on an instance, and not the engine's own index writes", async () => {
		const shard = stub(`__index:activity-${uniqueId('t')}:0`);
		const entry = { id: uniqueId('wf'), type: 't', status: 'running' as const, createdAt: 1, updatedAt: 1, version: 1 };
		const before = workBegunCount();
		for (let version = 1; version <= 5; version++) await shard.indexWrite([{ ...entry, version, updatedAt: version }]);
		expect(workBegunCount()).toBe(before);
		await instances.status(testEnv as never, { id: uniqueId('missing') }).catch(() => undefined);
		expect(workBegunCount()).toBe(before + 1);
	});
});
