import { describe, expect, it } from 'vitest';
// The browser module itself, run on Node: the page draws exactly what is tested here.
import { buildTimeline, restartPoints, roundTick } from '../../src/dashboard/public/dashboard/timeline.js';

const at = (t: number) => 1_000_000 + t;
let seq = 0;
const rec = (t: number, kind: string, fields: Record<string, unknown> = {}) => ({ seq: ++seq, at: at(t), kind, generation: 0, ...fields });

describe('buildTimeline', () => {
	it('gives each step one row with every attempt and the retry waits between them', () => {
		const timeline = buildTimeline(
			[
				rec(0, 'workflow.created', { payload: {} }),
				rec(10, 'step.started', { step: 'charge', attempt: 1 }),
				rec(30, 'step.attempt_failed', { step: 'charge', attempt: 1, error: { name: 'Error', message: 'boom' }, retryAt: at(1030) }),
				rec(1030, 'step.started', { step: 'charge', attempt: 2 }),
				rec(1050, 'step.completed', { step: 'charge', attempt: 2, result: 1 }),
				rec(1060, 'workflow.completed', { output: 1 }),
			],
			at(5000),
		);
		expect(timeline).toMatchObject({ start: at(0), end: at(1060), finishedAt: at(1060) });
		expect(timeline.rows).toEqual([
			{
				key: 'do:charge',
				kind: 'do',
				name: 'charge',
				segments: [
					{ type: 'attempt', attempt: 1, start: at(10), end: at(30), state: 'failed', error: { name: 'Error', message: 'boom' } },
					{ type: 'retry', start: at(30), end: at(1030), until: at(1030) },
					{ type: 'attempt', attempt: 2, start: at(1030), end: at(1050), state: 'ok' },
				],
			},
		]);
	});

	it('draws sleeps and event waits as bars of their own, open ones growing to now while the instance runs', () => {
		const timeline = buildTimeline(
			[
				rec(0, 'workflow.created'),
				rec(5, 'sleep.started', { step: 'nap', until: at(1005) }),
				rec(1010, 'sleep.finished', { step: 'nap' }),
				rec(1020, 'wait.started', { step: 'approval', event: 'approval', timeoutAt: null }),
			],
			at(3000),
		);
		expect(timeline.end).toBe(at(3000));
		expect(timeline.rows.map((r) => [r.key, r.segments.map((s) => [s.type, s.start, s.end])])).toEqual([
			['sleep:nap', [['sleep', at(5), at(1010)]]],
			['wait:approval', [['wait', at(1020), null]]],
		]);
	});

	it('shows an attempt cut short by a crash as interrupted, and the next attempt after it', () => {
		const { rows } = buildTimeline([rec(0, 'step.started', { step: 's', attempt: 1 }), rec(50, 'step.started', { step: 's', attempt: 2 })], at(60));
		expect(rows[0]!.segments.map((s) => 'state' in s && s.state)).toEqual(['interrupted', 'running']);
	});

	it('marks the rows a terminate cut short as cancelled, and no row of a run that ended on its own', () => {
		const started = [rec(0, 'step.started', { step: 'a', attempt: 1 }), rec(5, 'step.completed', { step: 'a', attempt: 1, result: 1 }), rec(10, 'sleep.started', { step: 'nap', until: at(10_000) })];
		const terminated = buildTimeline([...started, rec(40, 'workflow.terminated')], at(50));
		expect(terminated.rows.map((r) => [r.key, r.cancelled ?? false])).toEqual([
			['do:a', false],
			['sleep:nap', true],
		]);
		expect(terminated.rows[1]!.segments).toEqual([expect.objectContaining({ type: 'sleep', end: at(40) })]);
		const errored = buildTimeline([...started, rec(40, 'workflow.errored', { error: { name: 'Error', message: 'x' } })], at(50));
		expect(errored.rows.some((r) => r.cancelled)).toBe(false);
	});

	it('closes what was open when the instance ended, and marks pauses and received events', () => {
		const { rows, markers } = buildTimeline(
			[
				rec(0, 'wait.started', { step: 'approval', event: 'approval', timeoutAt: null }),
				rec(10, 'workflow.paused'),
				rec(20, 'event.received', { event: 'approval', payload: {} }),
				rec(30, 'workflow.terminated'),
			],
			at(99),
		);
		expect(rows[0]!.segments[0]).toMatchObject({ type: 'wait', end: at(30), outcome: null });
		expect(markers.map((m) => m.label)).toEqual(['paused', 'event approval received', 'terminated']);
	});

	it('shows an event that was buffered before its wait as a wait of no length', () => {
		const { rows } = buildTimeline([rec(0, 'event.received', { event: 'go' }), rec(5, 'event.consumed', { step: 'go', event: 'go', payload: 1 })], at(10));
		expect(rows[0]!.segments).toEqual([{ type: 'wait', start: at(5), end: at(5), event: 'go', outcome: 'received', timeoutAt: null }]);
	});

	it('draws each rollback as a row of its own after the step it undoes, and a webhook as a wait', () => {
		const timeline = buildTimeline(
			[
				rec(0, 'workflow.created'),
				rec(10, 'step.started', { step: 'charge', attempt: 1 }),
				rec(20, 'step.completed', { step: 'charge', attempt: 1, result: 'c1' }),
				rec(25, 'webhook.created', { step: 'approval', url: '/webhooks/t', expiresAt: null }),
				rec(40, 'webhook.received', { step: 'approval', payload: { approved: false } }),
				rec(50, 'workflow.rolling_back', { reason: 'failed', error: { name: 'Error', message: 'no' } }),
				rec(60, 'rollback.started', { step: 'charge', attempt: 1 }),
				rec(70, 'rollback.completed', { step: 'charge', attempt: 1 }),
				rec(80, 'workflow.errored', { error: { name: 'Error', message: 'no' }, rollback: { state: 'completed', completed: 1 } }),
			],
			at(5000),
		);
		expect(timeline.rows.map((r: { key: string }) => r.key)).toEqual(['do:charge', 'wait:approval', 'rollback:charge']);
		expect(timeline.rows[1].segments).toEqual([{ type: 'wait', start: at(25), end: at(40), event: 'webhook', outcome: 'received', timeoutAt: null }]);
		expect(timeline.rows[2].segments).toEqual([{ type: 'attempt', attempt: 1, start: at(60), end: at(70), state: 'ok' }]);
		expect(timeline.markers.map((m: { kind: string }) => m.kind)).toContain('workflow.rolling_back');
	});

	it('labels its axis with round durations: four ticks of 1, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times a power of ten', () => {
		expect([63, 253, 1012, 4, 250].map(roundTick)).toEqual([80, 300, 1500, 4, 250]);
	});
});

describe('child workflows on the timeline', () => {
	it('draws an invoked child as a bar until it completes, and a started one as a point', () => {
		const timeline = buildTimeline(
			[
				rec(0, 'workflow.created'),
				rec(5, 'child.started', { step: 'receipt', childId: 'o::receipt', childType: 'receipt', mode: 'start' }),
				rec(10, 'child.started', { step: 'ship', childId: 'o::ship', childType: 'shipping', mode: 'invoke' }),
				rec(900, 'child.completed', { step: 'ship', childId: 'o::ship', output: 'x' }),
			],
			at(1000),
		);
		expect(timeline.rows.map((r) => [r.key, r.segments])).toEqual([
			['child:receipt', [{ type: 'child', start: at(5), end: at(5), childId: 'o::receipt', outcome: 'started' }]],
			['child:ship', [{ type: 'child', start: at(10), end: at(900), childId: 'o::ship', outcome: 'completed' }]],
		]);
	});
});

describe('restartPoints', () => {
	it('lists the steps a restart can start from, once each, in the order the run first reached them, as the restart API names them', () => {
		const points = restartPoints([
			rec(0, 'workflow.created'),
			rec(1, 'step.started', { step: 'reserve', attempt: 1 }),
			rec(2, 'step.attempt_failed', { step: 'reserve', attempt: 1, retryAt: at(3) }),
			rec(3, 'step.started', { step: 'reserve', attempt: 2 }),
			rec(4, 'step.completed', { step: 'reserve', attempt: 2 }),
			rec(5, 'wait.started', { step: 'approval', event: 'approval', timeoutAt: null }),
			rec(6, 'event.consumed', { step: 'approval', event: 'approval' }),
			rec(7, 'sleep.started', { step: 'cool-off', until: at(9) }),
			rec(8, 'child.started', { step: 'ship', childId: 'x::ship', mode: 'invoke' }),
		]);
		expect(points.map(({ name, type }) => ({ name, type }))).toEqual([
			{ name: 'reserve', type: 'do' },
			{ name: 'approval', type: 'waitForEvent' },
			{ name: 'cool-off', type: 'sleep' },
			{ name: 'ship', type: 'invoke' },
		]);
	});
});
