import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ErrorCode } from '../../src/engine/support/errors';
import type { HistoryEvent } from '../../src/engine/history/history';
import { STREAM_KINDS, STREAM_MESSAGE_BURST, STREAM_MESSAGE_MAX_BYTES, STREAM_MESSAGES_PER_SECOND, toStreamRecord } from '../../src/engine/streams/stream';
import type { Step } from '../../src/engine/definition/types';
import { Workflow } from '../../src/workflow';
import { registryOf, startInstance } from './start-instance';

const streams = { progress: z.object({ percent: z.number().min(0).max(100) }), note: {} as { text: string } };

class Import extends Workflow<{ parts: number }, string> {
	static override readonly type = 'import';
	static override streams = streams;
	async run(step: Step<{}, typeof Import.streams>, { parts }: { parts: number }) {
		await step.emit('note', { text: 'starting' });
		for (let i = 1; i <= parts; i++) {
			await step.do(`part-${i}`, () => i);
			await step.emit('progress', { percent: Math.round((i / parts) * 100) });
		}
		await step.sleep('cool-off', '1 minute');
		await step.emit('note', { text: 'done' });
		return 'imported';
	}
}

let caught: string[] = [];
class Misbehaves extends Workflow<{ what: string }, string> {
	static override readonly type = 'misbehaves';
	static override streams = streams;
	async run(step: Step<{}, typeof Misbehaves.streams>, { what }: { what: string }) {
		try {
			if (what === 'topic') await (step as unknown as Step<{}, Record<string, object>>).emit('nope', {});
			if (what === 'schema') await step.emit('progress', { percent: 250 });
			if (what === 'large') await step.emit('note', { text: 'x'.repeat(STREAM_MESSAGE_MAX_BYTES) });
			if (what === 'rate') for (let i = 0; i < STREAM_MESSAGE_BURST + 1; i++) await step.emit('note', { text: `n${i}` });
		} catch (error) {
			caught.push((error as { code: string }).code);
		}
		return 'went on';
	}
}

const registry = registryOf(Import, Misbehaves);
const messages = (events: HistoryEvent[]) => events.filter((e) => e.kind === 'stream.message');

describe('step.emit', () => {
	it('records each message once, in run order, numbered, across replays of the run', async () => {
		const { host, engine } = await startInstance(registry, 'import', { parts: 3 });
		expect(engine.status().status).toBe('sleeping');
		await host.fireAlarm(engine); // a second pass replays every emit before the sleep
		expect(engine.status().status).toBe('completed');
		const recorded = messages(engine.history({ limit: 1000 }).events);
		expect(recorded.map((m) => [m.topic, m.data, m.index])).toEqual([
			['note', { text: 'starting' }, 1],
			['progress', { percent: 33 }, 2],
			['progress', { percent: 67 }, 3],
			['progress', { percent: 100 }, 4],
			['note', { text: 'done' }, 5],
		]);
	});

	it('publishes nothing twice after a crash mid-run: a new engine over the same storage replays the recorded messages silently', async () => {
		let { host, engine } = await startInstance(registry, 'import', { parts: 2 });
		host.crash();
		host = host.nextIsolate();
		const fresh = host.engine(); // evicted: nothing in memory survives
		await host.fireAlarm(fresh);
		const recorded = messages(fresh.history({ limit: 1000 }).events);
		expect(recorded.map((m) => m.index)).toEqual([1, 2, 3, 4]);
		expect(engine).not.toBe(fresh);
	});

	it.for([
		['topic', ErrorCode.StreamTopicUnknown],
		['schema', ErrorCode.StreamMessageInvalid],
		['large', ErrorCode.StreamMessageTooLarge],
		['rate', ErrorCode.StreamRateLimited],
	] as const)('refuses a message (%s) with a typed error run() can catch, and records nothing for it', async ([what, code]) => {
		caught = [];
		const { engine } = await startInstance(registry, 'misbehaves', { what });
		expect(caught).toEqual([code]);
		expect(engine.status()).toMatchObject({ status: 'completed', output: 'went on' });
		const recorded = messages(engine.history({ limit: 1000 }).events);
		expect(recorded).toHaveLength(what === 'rate' ? STREAM_MESSAGE_BURST : 0);
	});

	it('lets the rate refill with the clock', async () => {
		caught = [];
		const { host, engine } = await startInstance(registry, 'misbehaves', { what: 'rate' });
		expect(caught).toEqual([ErrorCode.StreamRateLimited]);
		host.advance(1000);
		await engine.restart();
		await host.idle();
		// A new generation starts numbering at 1; a second later the bucket holds the burst again.
		expect(caught.length).toBeLessThanOrEqual(2);
		const second = messages(engine.history({ limit: 1000 }).events);
		expect(second.length).toBeGreaterThanOrEqual(STREAM_MESSAGES_PER_SECOND);
		expect(second[0]).toMatchObject({ index: 1, generation: 1 });
	});
});

describe('a stream record', () => {
	it('carries status changes, step completions and messages, without the large value fields', async () => {
		const { host, engine } = await startInstance(registry, 'import', { parts: 1 });
		await host.fireAlarm(engine);
		const rows = host.store.readHistoryOfKinds({ afterSeq: 0, limit: 100, kinds: STREAM_KINDS });
		const records = rows.map(toStreamRecord);
		expect(records.map((r) => r.kind)).toEqual(['workflow.created', 'stream.message', 'step.completed', 'stream.message', 'stream.message', 'workflow.completed']);
		expect(records[0]).not.toHaveProperty('payload');
		expect(records[2]).toMatchObject({ step: 'part-1' });
		expect(records[2]).not.toHaveProperty('result');
		expect(records.at(-1)).not.toHaveProperty('output');
		expect(records[1]).toMatchObject({ topic: 'note', data: { text: 'starting' }, index: 1 });
		const seqs = records.map((r) => r.seq);
		expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
	});
});
