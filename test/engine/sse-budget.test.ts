import { describe, expect, it } from 'vitest';
import { SSE_RESPONSE_BYTES, SseBudget } from '../../src/engine/streams/sse-budget';
import { STREAM_SUBSCRIBER_WINDOW } from '../../src/engine/streams/stream-window';

describe('the budget of one SSE response', () => {
	it('is a subscriber window', () => {
		expect(SSE_RESPONSE_BYTES).toBe(STREAM_SUBSCRIBER_WINDOW);
	});

	it('admits records until the next would pass it, counting what carries no record too', () => {
		const budget = new SseBudget(1_000);
		budget.spend(100);
		expect(budget.admit(1, 500)).toBe(true);
		expect(budget.admit(2, 400)).toBe(true);
		expect(budget.admit(3, 1)).toBe(false);
		expect(budget.behind()).toBe('id: 2\nevent: behind\ndata: {"kind":"behind","seq":2,"bytes":1000}\n\n');
	});

	it('always admits the first record, however large, so every response moves its reader on', () => {
		const budget = new SseBudget(1_000);
		budget.spend(20);
		expect(budget.admit(7, 5_000)).toBe(true);
		expect(budget.admit(8, 1)).toBe(false);
		expect(budget.behind()).toContain('id: 7\n');
	});

	it("admits the stream's end past the budget: a reader is not sent back only to read it", () => {
		const budget = new SseBudget(1_000);
		expect(budget.admit(1, 1_000)).toBe(true);
		expect(budget.admit(1, 60, true)).toBe(true);
	});
});
