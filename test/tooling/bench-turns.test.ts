import { describe, expect, it } from 'vitest';
import { inTurn } from '../../bench/lib/turns.mjs';

describe("the bench's order of engines in a repetition", () => {
	it('puts each engine first, second and third once over three repetitions of three engines', () => {
		const orders = [0, 1, 2].map((rep) => inTurn(['ours', 'cf', 'floor'], rep));
		expect(orders).toEqual([
			['ours', 'cf', 'floor'],
			['cf', 'floor', 'ours'],
			['floor', 'ours', 'cf'],
		]);
		for (const engine of ['ours', 'cf', 'floor']) expect(new Set(orders.map((order) => order.indexOf(engine)))).toEqual(new Set([0, 1, 2]));
	});

	it('alternates which of two sides goes first, and leaves the list it was given as it was', () => {
		const sides = ['head', 'base'];
		expect([0, 1, 2, 3].map((rep) => inTurn(sides, rep)[0])).toEqual(['head', 'base', 'head', 'base']);
		expect(sides).toEqual(['head', 'base']);
		expect(inTurn([], 5)).toEqual([]);
	});
});
