import { describe, expect, it } from 'vitest';
import { SingleFlight } from '../../src/engine/support/single-flight';

/** A flight whose rounds record when they start and wait for the test to release them. */
function harness(options: { throwOnRound?: number } = {}) {
	const rounds: number[] = [];
	const releases: (() => void)[] = [];
	const afters: number[] = [];
	const background: Promise<void>[] = [];
	const flight = new SingleFlight({
		background: (p) => void background.push(p.catch(() => undefined)),
		round: async () => {
			rounds.push(rounds.length + 1);
			if (options.throwOnRound === rounds.length) throw new Error('round failed');
			await new Promise<void>((resolve) => releases.push(resolve));
		},
		after: () => afters.push(rounds.length),
	});
	const releaseNext = async () => {
		while (releases.length === 0) await Promise.resolve();
		releases.shift()!();
		await new Promise((r) => setTimeout(r, 0));
	};
	return { flight, rounds, afters, background, releaseNext };
}

describe('SingleFlight', () => {
	it('runs one flight at a time: requests during a round make it go round once more, not start a second flight', async () => {
		const { flight, rounds, afters, releaseNext } = harness();
		flight.request();
		expect(flight.inFlight).toBeDefined();
		flight.request();
		flight.request();
		await releaseNext();
		expect(rounds).toEqual([1, 2]);
		await releaseNext();
		expect(rounds).toEqual([1, 2]);
		expect(flight.inFlight).toBeUndefined();
		expect(afters).toEqual([2]);
	});

	it('serves a request made after the last round began with a new round', async () => {
		const { flight, rounds, releaseNext } = harness();
		flight.request();
		await releaseNext();
		expect(flight.inFlight).toBeUndefined();
		flight.request();
		expect(flight.inFlight).toBeDefined();
		await releaseNext();
		expect(rounds).toEqual([1, 2]);
	});

	it('clears the flight and runs `after` even when a round throws, so the next request starts again', async () => {
		const { flight, rounds, afters, background, releaseNext } = harness({ throwOnRound: 1 });
		flight.request();
		await Promise.all(background);
		expect(flight.inFlight).toBeUndefined();
		expect(afters).toEqual([1]);
		flight.request();
		await releaseNext();
		expect(rounds).toEqual([1, 2]);
		expect(afters).toEqual([1, 2]);
	});

	it('ends a flight whose round returns at once, leaving nothing in flight', async () => {
		let rounds = 0;
		const flights: Promise<void>[] = [];
		const flight = new SingleFlight({ background: (p) => void flights.push(p), round: async () => void rounds++ });
		flight.request();
		await Promise.all(flights);
		expect(rounds).toBe(1);
		expect(flight.inFlight).toBeUndefined();
	});
});
