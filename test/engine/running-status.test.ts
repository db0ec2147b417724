import { describe, expect, it } from 'vitest';
import { Workflow, type Step } from '../../src/authoring';
import type { InstanceRow } from '../../src/engine/storage/store';
import { VirtualHost } from '../../src/testing/virtual-host';
import { registryOf } from './start-instance';

/** Releases the `wait` step of the next pass; the first pass's `wait` never settles when `hangFirst` (its isolate dies). */
let release: (() => void) | undefined;
let hangFirst = false;
let waits = 0;

class ShortWorkflow extends Workflow<{}, number> {
	static override readonly type = 'short';
	async run(step: Step) {
		const a = await step.do('a', () => 1);
		return a + (await step.do('b', () => 2));
	}
}

class WaitingWorkflow extends Workflow<{}, string> {
	static override readonly type = 'waiting';
	async run(step: Step) {
		await step.do('before', () => 1);
		const waited = await step.do('wait', async () => {
			waits++;
			if (hangFirst && waits === 1) return new Promise<string>(() => {});
			return new Promise<string>((resolve) => (release = () => resolve('released')));
		});
		return waited;
	}
}

const registry = registryOf(ShortWorkflow, WaitingWorkflow);

/** A host whose instance writes are noted (each row written, as storage got it). */
function hostNotingRows() {
	const written: InstanceRow[] = [];
	const host = new VirtualHost({
		registry,
		gate: {
			admit: (method: string, args: unknown[]) => {
				if (method === 'writeInstance') written.push({ ...(args[0] as InstanceRow) });
				return true;
			},
		},
	});
	return { host, written };
}

async function until(check: () => boolean): Promise<void> {
	for (let i = 0; i < 200 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 0));
	expect(check()).toBe(true);
}

describe("a first pass's running status, written when someone could see it", () => {
	it('a run that ends before its index entry is delivered is written created, then its outcome: never running', async () => {
		const { host, written } = hostNotingRows();
		const engine = host.engine();
		await engine.create('wf-1', 'short', {});
		await host.idle();
		expect(engine.status()).toMatchObject({ status: 'completed', output: 3, version: 3 });
		expect(written.map((row) => row.status)).toEqual(['created', 'completed']);
		expect(host.indexEntries.at(-1)).toMatchObject({ status: 'completed', version: 3 });
	});

	it('a pass still running when its entry is delivered writes running first: the index never holds a version storage does not', async () => {
		hangFirst = false;
		waits = 0;
		const { host, written } = hostNotingRows();
		const engine = host.engine();
		await engine.create('wf-1', 'waiting', {});
		await until(() => host.indexEntries.some((entry) => entry.status === 'running'));
		const shown = host.indexEntries.find((entry) => entry.status === 'running')!;
		expect(host.durable.store.readInstance()).toMatchObject({ status: 'running', version: shown.version });
		expect(engine.status()).toMatchObject({ status: 'running', version: shown.version });
		release!();
		await host.idle();
		expect(written.map((row) => row.status)).toEqual(['created', 'running', 'completed']);
		expect(host.indexEntries.at(-1)).toMatchObject({ status: 'completed', version: engine.status().version });
	});

	it('an isolate that dies while running is held in memory leaves the run to its alarm, which completes it; the index ends right', async () => {
		hangFirst = true;
		waits = 0;
		let host = new VirtualHost({ registry });
		const engine = host.engine();
		await engine.create('wf-1', 'waiting', {});
		// The first pass completes `before` and hangs in `wait`; reads answer running meanwhile.
		await until(() => waits === 1);
		expect(engine.status()).toMatchObject({ status: 'running' });
		host.crash();
		host = host.nextIsolate();
		const revived = host.engine();
		// Storage holds created (or running, if the delivery came first): either way the alarm runs the pass again.
		expect(['created', 'running']).toContain(revived.status().status);
		const fired = host.fireAlarm(revived);
		await until(() => release !== undefined && waits === 2);
		release!();
		await fired;
		await host.idle();
		expect(revived.status()).toMatchObject({ status: 'completed', output: 'released' });
		expect(revived.status().steps.find((s) => s.name === 'before')).toMatchObject({ status: 'completed', attempts: 1 });
		expect(host.indexEntries.at(-1)).toMatchObject({ status: 'completed', version: revived.status().version });
	});
});
