import { describe, expect, it } from 'vitest';
import type { Step } from '../../src/engine/definition/types';
import { Workflow } from '../../src/workflow';
import { NonRetryableError } from '../../src/engine/support/errors';
import { registryOf } from './start-instance';
import { VirtualHost } from '../../src/testing/virtual-host';
import type { StepRow } from '../../src/engine/storage/store';

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
		const host = new VirtualHost({ registry: registryOf(Napper) });
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
		const start = host.now();
		host.advance(60_000); // the nap is due
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
		const host = new VirtualHost({ registry: registryOf(Napper) });
		let engine = host.engine();
		await engine.create('wf-2', 'napper', {});
		await host.idle();
		host.store.readSteps = () => {
			throw new Error('storage refused the read');
		};
		const failures: number[] = [];
		host.log = (record) => void (record.event === 'pass.failed' && failures.push(record.failures as number));
		host.advance(60_000);
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

/** What the saga's steps did, in order, across passes. */
const effects: string[] = [];
class Saga extends Workflow<{}, string> {
	static override readonly type = 'saga-storage';
	async run(step: Step) {
		await step.do('reserve', async () => void effects.push('reserve'), { rollback: async () => void effects.push('release') });
		try {
			await step.do('charge', async () => {
				effects.push('charge');
				await new Promise((resolve) => setTimeout(resolve, 1));
				return 'charged';
			});
		} catch {
			// The workflow's own fallback, for a charge that failed: never for a storage failure.
			await step.do('fallback', async () => void effects.push('fallback'));
			return 'fell back';
		}
		return step.do('ship', async () => {
			effects.push('ship');
			return 'shipped';
		});
	}
}

/** The store's `method` throws `message` once, for the first step row `matches`, as SQLite would. */
function failStepWriteOnce(host: VirtualHost, method: 'writeStepWithRecord' | 'insertStep', matches: (row: StepRow) => boolean, message: string): void {
	const write = host.store[method].bind(host.store) as (row: StepRow, more: never) => void;
	let failing = true;
	host.store[method] = ((row: StepRow, more: never) => {
		if (failing && matches(row)) {
			failing = false;
			throw new Error(message);
		}
		write(row, more);
	}) as never;
}

describe('a storage failure inside run() (an SQL error under a step\'s write)', () => {
	it('fails the pass, not the run: no catch of the workflow runs, no rollback, and the retried pass completes it', async () => {
		effects.length = 0;
		const host = new VirtualHost({ registry: registryOf(Saga) });
		const engine = host.engine();
		// The charge's completion is the write that fails, once, as an older build meeting a newer schema would.
		failStepWriteOnce(host, 'writeStepWithRecord', (row) => row.name === 'charge' && row.status === 'completed', 'ON CONFLICT clause does not match any PRIMARY KEY or UNIQUE constraint: SQLITE_ERROR');
		const failures: unknown[] = [];
		host.log = (record) => void (record.event === 'pass.failed' && failures.push(record));
		await engine.create('wf-1', 'saga-storage', {});
		await host.idle();

		expect(failures).toEqual([expect.objectContaining({ instanceId: 'wf-1', failures: 1, error: expect.objectContaining({ message: expect.stringContaining('SQLITE_ERROR') }) })]);
		expect(engine.status().status).toBe('running');
		expect(effects).toEqual(['reserve', 'charge']);

		await host.fireAlarm(engine);
		await host.idle();
		expect(engine.status()).toMatchObject({ status: 'completed', output: 'shipped' });
		// The charge ran again (its completion was never stored, as after a crash); nothing else twice, no fallback, no release.
		expect(effects).toEqual(['reserve', 'charge', 'charge', 'ship']);
		const kinds = engine.history().events.map((r) => r.kind);
		expect(kinds).not.toContain('workflow.errored');
		expect(kinds).not.toContain('workflow.rolling_back');
	});

	it('stops the steps after it: a later step called in the same pass runs nothing', async () => {
		effects.length = 0;
		const host = new VirtualHost({ registry: registryOf(Saga) });
		const engine = host.engine();
		failStepWriteOnce(host, 'insertStep', (row) => row.name === 'reserve', 'SQLITE_FULL: database or disk is full');
		host.log = () => {};
		await engine.create('wf-2', 'saga-storage', {});
		await host.idle();
		expect(effects).toEqual(['reserve']);
		expect(engine.status().status).toBe('running');
		await host.fireAlarm(engine);
		await host.idle();
		expect(engine.status()).toMatchObject({ status: 'completed', output: 'shipped' });
		expect(effects).toEqual(['reserve', 'reserve', 'charge', 'ship']);
	});
});

/** A step that never settles while `hanging` is set: the pass it is in is cut short when the isolate dies. */
let hanging = true;
let attempts = 0;
class Hanger extends Workflow<{}, string> {
	static override readonly type = 'hanger';
	async run(step: Step) {
		return step.do('hang', () => (attempts++, hanging ? new Promise<string>(() => {}) : 'done'), { retries: { limit: 100, delay: 0 } });
	}
}

describe('a pass cut short again and again (the isolate dies mid-pass: a crash, or a memory or CPU limit)', () => {
	it('restarts at once after one cut, backs off after repeated cuts with the count kept in storage, and clears it once a pass ends', async () => {
		[hanging, attempts] = [true, 0];
		let host = new VirtualHost({ registry: registryOf(Hanger) });
		let engine = host.engine();
		await engine.create('wf-1', 'hanger', {});
		const turn = () => new Promise((resolve) => setTimeout(resolve, 0));
		await turn();
		const die = () => {
			host.crash(); // the isolate is gone: its pass never ends, nothing in memory survives
			host = host.nextIsolate();
			engine = host.engine();
		};
		const alarmIn = () => host.alarmAt! - host.now();
		/** Fires the alarm without waiting for the pass it starts (which hangs until the isolate dies). */
		const fire = async () => {
			if (host.alarmAt === undefined) return false;
			host.clock.moveTo(Math.max(host.now(), host.alarmAt));
			host.alarmAt = undefined;
			engine.alarm();
			await turn();
			return true;
		};
		expect(attempts).toBe(1);

		die();
		expect(alarmIn()).toBe(10_000); // the watchdog
		await fire();
		expect(attempts).toBe(2); // one cut: straight back to work
		expect(host.store.readCutPasses()).toMatchObject({ count: 1 });

		die();
		await fire(); // the watchdog, 10 s on: the backoff of one cut has passed
		expect(attempts).toBe(3);
		expect(host.store.readCutPasses()).toMatchObject({ count: 2 });

		die();
		await fire(); // the watchdog comes 10 s on, but two cuts in a row wait 20 s
		expect(attempts).toBe(3);
		expect(alarmIn()).toBe(10_000);
		await fire();
		expect(attempts).toBe(4);

		// The backoff doubles up to 5 minutes: a pass killed every time costs a few passes an hour, not one every 10 s.
		const start = host.now();
		while (host.now() - start < 3_600_000) {
			die();
			await fire();
		}
		expect(attempts).toBeLessThan(30);
		expect(host.store.readCutPasses()!.count).toBeGreaterThan(10);

		hanging = false;
		die();
		while (engine.status().status !== 'completed' && (await fire()));
		expect(engine.status()).toMatchObject({ status: 'completed', output: 'done' });
		expect(host.store.readCutPasses()).toBeUndefined();
	});

	it('logs a repeated cut with the step whose attempt it cut, its passes in a row and when it retries, named as pass.failed names them', async () => {
		[hanging, attempts] = [true, 0];
		let host = new VirtualHost({ registry: registryOf(Hanger) });
		const logged: Record<string, unknown>[] = [];
		host.log = (record) => void (record.event.startsWith('pass.') && logged.push(record));
		let engine = host.engine();
		await engine.create('wf-2', 'hanger', {});
		const turn = () => new Promise((resolve) => setTimeout(resolve, 0));
		await turn();
		const dieAndFire = async () => {
			host.crash();
			host = host.nextIsolate();
			engine = host.engine();
			host.clock.moveTo(Math.max(host.now(), host.alarmAt!));
			host.alarmAt = undefined;
			engine.alarm();
			await turn();
		};
		await dieAndFire(); // one cut: straight back to work, nothing logged
		expect(logged).toEqual([]);
		await dieAndFire(); // the second cut in a row: attempt 2 of 'hang' was in flight
		expect(logged).toEqual([
			{ severity: 'error', event: 'pass.cut', instanceId: 'wf-2', type: 'hanger', failures: 1, retryAt: new Date(host.now() + 20_000).toISOString(), step: 'hang', attempt: 2 },
		]);
		hanging = false;
		host.crash();
	});
});

/** What the rolling-back saga's compensations were given, in order, across passes. */
const released: string[] = [];
/** A reservation too large to stay beside its row: a replay or a rollback reads it from storage. */
const bigReservation = 'r'.repeat(4096);
class BigSaga extends Workflow<{}, string> {
	static override readonly type = 'big-saga-storage';
	async run(step: Step) {
		await step.do('reserve', async () => bigReservation, { rollback: async (reservation) => void released.push(String(reservation).slice(0, 3)) });
		return step.do('charge', async (): Promise<string> => {
			throw new NonRetryableError('card declined');
		});
	}
}

/** The store's step-result reads throw (as SQLite would) at the calls numbered in `failing` (1-based, counted from now). */
function failResultReads(host: VirtualHost, failing: number[]): void {
	const read = host.store.readStepResults.bind(host.store);
	let calls = 0;
	host.store.readStepResults = (keys) => {
		calls++;
		if (failing.includes(calls)) throw new Error('SQLITE_IOERR: disk I/O error');
		return read(keys);
	};
}

describe('a storage failure while a run rolls back (an SQL error under a compensation\'s pass)', () => {
	for (const [where, call] of [['replaying the steps whose rollbacks it learns', 1], ['reading the result a compensation is given', 2]] as const) {
		it(`fails the pass when it comes ${where}: every compensation runs once, with its step's result, and the run ends rolled back`, async () => {
			released.length = 0;
			const host = new VirtualHost({ registry: registryOf(BigSaga) });
			const engine = host.engine();
			const failures: unknown[] = [];
			host.log = (record) => void (record.event === 'pass.failed' && failures.push(record));
			// The first pass stores the reservation and fails the charge; the rollback pass reads the reservation twice.
			failResultReads(host, [call]);
			await engine.create('wf-1', 'big-saga-storage', {});
			await host.idle();
			while (engine.status().status === 'rolling_back' && host.alarmAt !== undefined) {
				await host.fireAlarm(engine);
				await host.idle();
			}
			expect(failures).toEqual([expect.objectContaining({ instanceId: 'wf-1', error: expect.objectContaining({ message: expect.stringContaining('SQLITE_IOERR') }) })]);
			expect(released).toEqual(['rrr']);
			const status = engine.status();
			expect(status).toMatchObject({ status: 'errored', rollback: { state: 'completed' } });
			const kinds = engine.history().events.map((r) => r.kind);
			expect(kinds.filter((k) => k === 'rollback.completed')).toHaveLength(1);
			expect(kinds).not.toContain('rollback.attempt_failed');
			expect(kinds).not.toContain('rollback.failed');
		});
	}
});

class BigNapper extends Workflow<{}, number> {
	static override readonly type = 'big-napper';
	async run(step: Step) {
		const big = await step.do('big', async () => 'b'.repeat(4096));
		await step.sleep('nap', '1 minute');
		return step.do('length', async () => big.length);
	}
}

describe('a storage failure while a pass replays a large result (read from storage, not kept beside its row)', () => {
	it('fails the pass, not the step: the run is not errored, and the retried pass replays the result', async () => {
		const host = new VirtualHost({ registry: registryOf(BigNapper) });
		const engine = host.engine();
		const failures: unknown[] = [];
		host.log = (record) => void (record.event === 'pass.failed' && failures.push(record));
		await engine.create('wf-1', 'big-napper', {});
		await host.idle();
		failResultReads(host, [1]);
		host.advance(60_000); // the nap is due: the pass replays 'big', whose read fails
		await host.fireAlarm(engine);
		await host.idle();
		expect(failures).toHaveLength(1);
		expect(engine.status().status).toBe('sleeping');
		await host.fireAlarm(engine); // the backoff's retry
		await host.idle();
		expect(engine.status()).toMatchObject({ status: 'completed', output: 4096 });
	});
});
