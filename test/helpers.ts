import { runDurableObjectAlarm } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import type { WorkflowRunner } from './worker/index';
import { testClock } from './worker/test-clock';

export const testEnv = env as unknown as { WORKFLOW_RUNNER: DurableObjectNamespace<WorkflowRunner> };

/** The Durable Object stub behind a workflow id or shard name. */
export function stub(name: string): DurableObjectStub<WorkflowRunner> {
	return testEnv.WORKFLOW_RUNNER.get(testEnv.WORKFLOW_RUNNER.idFromName(name));
}

/** Waits until the instance's replay loop and index delivery are idle. */
export async function settle(id: string): Promise<void> {
	await stub(id).settle();
}

/** Moves every instance's clock forward (sleeps, timeouts and retry waits see the new time). */
export function advanceClock(ms: number): void {
	testClock.offsetMs += ms;
}

export function resetClock(): void {
	testClock.offsetMs = 0;
}

/** Fires the instance's alarm now (if one is set) and waits for the work it starts. */
export async function fireAlarm(id: string): Promise<boolean> {
	const ran = await runDurableObjectAlarm(stub(id));
	await settle(id);
	return ran;
}

let counter = 0;
/** A workflow id unique to this test run. */
export function uniqueId(prefix = 'wf'): string {
	return `${prefix}-${Date.now().toString(36)}-${(counter++).toString(36)}`;
}

/** Polls `check` every 10 ms until it holds; fails naming `what` after `tries` polls (3 s by default). */
export async function until(check: () => boolean | Promise<boolean>, what: string, tries = 300): Promise<void> {
	for (let i = 0; i < tries; i++) {
		if (await check()) return;
		await new Promise((r) => setTimeout(r, 10));
	}
	throw new Error(`timed out waiting for ${what}`);
}
