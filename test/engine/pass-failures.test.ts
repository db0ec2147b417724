import { describe, expect, it } from 'vitest';
import type { Step } from '../../src/engine/types';
import { Workflow } from '../../src/workflow';
import { FakeHost, registryOf } from './fake-host';

class Napper extends Workflow<{}, string> {
	static override readonly type = 'napper';
	async run(step: Step) {
		await step.do('before', () => 1);
		await step.sleep('nap', '1 minute');
		return step.do('after', () => 'done');
	}
}

describe('a pass that fails outside run() (storage, a registry that cannot run, a bug)', () => {
	it('is retried from the alarm with a backoff, not in a loop, and the instance goes on once the cause is gone', async () => {
		const host = new FakeHost(registryOf(Napper));
		const engine = host.engine();
		await engine.create('wf-1', 'napper', {});
		await host.idle();
		expect(engine.status().status).toBe('sleeping');

		let broken = true;
		let passes = 0;
		const readSteps = host.store.readSteps.bind(host.store);
		host.store.readSteps = () => {
			if (broken) {
				passes++;
				throw new Error('storage refused the read');
			}
			return readSteps();
		};
		const errors: unknown[] = [];
		host.log = (record) => void (record.event === 'pass.failed' && errors.push(record));
		const start = host.clock;
		host.clock += 60_000; // the nap is due
		// Fire every alarm due in the next 10 minutes of virtual time.
		while (host.alarmAt !== undefined && host.alarmAt <= start + 60_000 + 600_000) {
			await host.fireAlarm(engine);
			await host.idle();
		}
		// 1 s, 2 s, 4 s, ... 256 s: about ten attempts in ten minutes, not thousands.
		expect(passes).toBeGreaterThanOrEqual(5);
		expect(passes).toBeLessThanOrEqual(12);
		expect(errors[0]).toMatchObject({ instanceId: 'wf-1', type: 'napper', failures: 1 });

		broken = false;
		await host.fireAlarm(engine);
		await host.idle();
		expect(engine.status()).toMatchObject({ status: 'completed', output: 'done' });
	});

	it('keeps its backoff when the object is evicted between two failing passes', async () => {
		const host = new FakeHost(registryOf(Napper));
		let engine = host.engine();
		await engine.create('wf-2', 'napper', {});
		await host.idle();
		host.store.readSteps = () => {
			throw new Error('storage refused the read');
		};
		const failures: number[] = [];
		host.log = (record) => void (record.event === 'pass.failed' && failures.push(record.failures as number));
		host.clock += 60_000;
		for (let i = 0; i < 3; i++) {
			await host.fireAlarm(engine);
			await host.idle();
		}
		engine = host.engine(); // evicted: a new engine over the same storage, in the same isolate
		await host.fireAlarm(engine);
		await host.idle();
		expect(failures).toEqual([1, 2, 3, 4]);
	});
});
