import { describe, expect, it } from 'vitest';
import { advanceCursors, placeOf, type SubscriberPlace } from '../../src/engine/streams/stream-cursors';

const places = (...cursors: [number, boolean][]) => new Map<string, SubscriberPlace>(cursors.map(([cursor, attached], i) => [`s${i}`, { cursor, attached }]));

describe('stream cursors', () => {
	it('writes no attachment for a message to subscribers in step with the stream: only the shared head moves', () => {
		const subscribers = places(...Array.from({ length: 1000 }, () => [10, false] as [number, boolean]));
		const { head, rewrite } = advanceCursors(subscribers, 10, () => 11);
		expect(head).toBe(11);
		expect(rewrite).toEqual([]);
		expect([...subscribers.values()].every((p) => p.cursor === 11 && !p.attached)).toBe(true);
	});

	it('lets a new subscriber go of its own cursor once it reaches the head, with one write', () => {
		const subscribers = places([10, false], [3, true]);
		expect(advanceCursors(subscribers, 10, () => 11)).toEqual({ head: 11, rewrite: [{ sub: 's1' }] });
		expect(advanceCursors(subscribers, 11, () => 12)).toEqual({ head: 12, rewrite: [] });
	});

	it('keeps the cursor of a subscriber catching up in its attachment, once per page, while the others stay at the head', () => {
		const subscribers = places([500, false], [0, true]);
		// A page of the laggard's records, below the head: only it moves.
		expect(advanceCursors(subscribers, 500, () => 100)).toEqual({ head: 500, rewrite: [{ sub: 's1', after: 100 }] });
		expect(advanceCursors(subscribers, 500, () => 200)).toEqual({ head: 500, rewrite: [{ sub: 's1', after: 200 }] });
		// A page that passes the head moves everyone there.
		expect(advanceCursors(subscribers, 500, () => 560)).toEqual({ head: 560, rewrite: [{ sub: 's1' }] });
	});

	it('keeps its own cursor for a subscriber that started ahead of the head', () => {
		const subscribers = places([40, true]);
		expect(advanceCursors(subscribers, 0, () => 20)).toEqual({ head: 20, rewrite: [] });
		expect(subscribers.get('s0')).toEqual({ cursor: 40, attached: true });
	});

	it('puts a woken socket where its attachment says, or at the head when it leaves it to the head', () => {
		expect(placeOf({ sub: 'a', after: 7 }, 30)).toEqual({ cursor: 7, attached: true });
		expect(placeOf({ sub: 'a' }, 30)).toEqual({ cursor: 30, attached: false });
	});
});
