import { evictDurableObject, runInDurableObject } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { instances } from '../../src/client/instance-client';
import { fullRecord, leanRecord } from '../../src/runtime/compact-lean-record';
import { readInstanceValue, type EncodedInstance } from '../../src/runtime/compact-record-codec';
import { decodeStep, encodeStep, readStepValue, type EncodedStep } from '../../src/runtime/compact-step-codec';
import type { StoredStep } from '../../src/runtime/compact-history';
import { storageSettingsOf } from '../../src/runtime/storage-format';
import { api } from '../api/helpers';
import { advanceClock, fireAlarm, resetClock, settle, stub, testEnv, uniqueId } from '../helpers';

/**
 * Storage format 5 as earlier builds of main wrote it (the object form: the lean record of compact-lean-record.ts, steps
 * as objects) is read by this build, which writes the compact encoding (compact-record-codec.ts): an instance left
 * asleep or waiting by such a build finishes here.
 */
const format5 = storageSettingsOf(testEnv as Parameters<typeof storageSettingsOf>[0]).foldSleeps;

/** Rewrites the instance's record and step keys in the object form, as main wrote them before the compact encoding. */
async function asMainWroteIt(id: string): Promise<void> {
	await runInDurableObject(stub(id), (_, state) => {
		const kv = state.storage.kv;
		kv.put('i', leanRecord(fullRecord(readInstanceValue(kv.get('i')))!));
		for (const [key, value] of [...kv.list<StoredStep | EncodedStep>({ prefix: 's:' })]) kv.put(key, readStepValue(value, 0));
	});
	// The object forgets what it kept in memory: the next call reads storage.
	await evictDurableObject(stub(id));
}

const storedForm = (id: string) => runInDurableObject(stub(id), (_, state) => ('row' in (state.storage.kv.get<object>('i') ?? {}) ? 'object' : 'compact'));
const stepsOf = async (id: string) => ((await api('GET', `/workflows/${id}/steps`)).json.items as { name: string; status: string }[]).map((s) => [s.name, s.status]);
const kindsOf = async (id: string) => ((await api('GET', `/workflows/${id}/history`)).json.events as { kind: string; step?: string }[]).map((e) => `${e.kind}${e.step ? ` ${e.step}` : ''}`);

describe.runIf(format5)('an instance format 5 left in the object form (main before the compact encoding) finishes on this build', () => {
	it('mid-sleep: woken, it completes with its output, its steps and its history', async () => {
		const id = uniqueId('layout-compact');
		await instances.create(testEnv, { type: 'step-nap-step' as never, id, payload: {} as never });
		await settle(id);
		expect((await instances.status(testEnv, { id })).status).toBe('sleeping');
		await asMainWroteIt(id);
		expect(await storedForm(id)).toBe('object');
		expect(await stepsOf(id)).toEqual([['before', 'completed'], ['nap', 'sleeping']]);
		advanceClock(1_000);
		await fireAlarm(id);
		await settle(id);
		const done = await instances.status(testEnv, { id });
		expect([done.status, done.output]).toEqual(['completed', 2]);
		expect(await storedForm(id)).toBe('compact');
		expect(await stepsOf(id)).toEqual([['before', 'completed'], ['nap', 'completed'], ['after', 'completed']]);
		expect(await kindsOf(id)).toEqual(['workflow.created', 'step.started before', 'step.completed before', 'sleep.started nap', 'sleep.finished nap', 'step.started after', 'step.completed after', 'workflow.completed']);
		resetClock();
	});

	it('mid-wait: its event arrives, it is consumed once, and the run goes on to its end', async () => {
		const id = uniqueId('layout-compact');
		await instances.create(testEnv, { type: 'redeployed' as never, id, payload: {} as never });
		await settle(id);
		expect((await instances.status(testEnv, { id })).status).toBe('waiting');
		await asMainWroteIt(id);
		expect(await storedForm(id)).toBe('object');
		await instances.sendEvent(testEnv, { id, event: 'approval', payload: { ok: true } });
		await settle(id);
		expect((await instances.status(testEnv, { id })).status).toBe('sleeping');
		// Left asleep again, in the object form: the settle sleep's wake-up is read from it too.
		await asMainWroteIt(id);
		advanceClock(60 * 60_000);
		await fireAlarm(id);
		await settle(id);
		const done = await instances.status(testEnv, { id });
		expect([done.status, done.output]).toEqual(['completed', 'done']);
		expect(await stepsOf(id)).toEqual([['reserve', 'completed'], ['approval', 'completed'], ['charge', 'completed'], ['settle', 'completed']]);
		expect((await kindsOf(id)).filter((kind) => kind.startsWith('event.') || kind.startsWith('step.started'))).toEqual(['step.started reserve', 'event.received', 'event.consumed approval', 'step.started charge']);
		resetClock();
	});
});

/** A step's value as main encodes it before compact-error-detail.ts: its stack whole (`es`), each detail as its JSON text (`d`). */
function asMainEncodesIt(encoded: EncodedStep, base: number): EncodedStep {
	const step = decodeStep(encoded, base);
	const out = encodeStep(step, base);
	if (out.ef !== undefined) {
		out.es = step.errorStack!;
		delete out.ef;
	}
	out.m?.forEach((record, i) => {
		if (record.E === undefined) return;
		record.d = step.more![i]!.detail!;
		delete record.E;
	});
	return out;
}

/** Rewrites the record's steps and the step keys as main encodes a retried step's errors. */
async function asMainEncodedIt(id: string): Promise<void> {
	await runInDurableObject(stub(id), (_, state) => {
		const kv = state.storage.kv;
		const record = kv.get<EncodedInstance>('i')!;
		if (record.st) record.st = record.st.map((step) => asMainEncodesIt(step, record.r.c));
		kv.put('i', record);
		for (const [key, value] of [...kv.list<EncodedStep>({ prefix: 's:' })]) kv.put(key, asMainEncodesIt(value, 0));
		const stored = JSON.stringify([...kv.list()]);
		expect(stored).not.toContain('"E":');
		expect(stored).not.toContain('"ef":');
	});
	await evictDurableObject(stub(id));
}

describe.runIf(format5)('an instance left mid-retry by main in the compact encoding (its errors as JSON text, stacks whole) finishes on this build', () => {
	it("after each failed attempt: the run completes, each attempt's error in the history as it was thrown", async () => {
		const id = uniqueId('layout-compact');
		await instances.create(testEnv, { type: 'costed-retry' as never, id, payload: { delayMs: 1_000 } as never });
		await settle(id);
		for (let retry = 0; retry < 2; retry++) {
			expect((await instances.status(testEnv, { id })).status).toBe('sleeping');
			await asMainEncodedIt(id);
			expect(await stepsOf(id)).toEqual([['before', 'completed'], ['flaky', 'retrying']]);
			advanceClock(1_000);
			await fireAlarm(id);
		}
		await settle(id);
		expect(await instances.status(testEnv, { id })).toMatchObject({ status: 'completed', output: 5 });
		expect(await stepsOf(id)).toEqual([['before', 'completed'], ['flaky', 'completed'], ['after', 'completed']]);
		const events = (await api('GET', `/workflows/${id}/history`)).json.events as { kind: string; attempt?: number; error?: { message: string; stack: string } }[];
		const failed = events.filter((e) => e.kind === 'step.attempt_failed');
		expect(failed.map((e) => [e.attempt, e.error?.message])).toEqual([[1, 'attempt 1 fails, as an outside API may'], [2, 'attempt 2 fails, as an outside API may']]);
		for (const e of failed) expect(e.error?.stack).toMatch(new RegExp(`^Error: attempt ${e.attempt} fails, as an outside API may\\n    at `));
		resetClock();
	});
});
