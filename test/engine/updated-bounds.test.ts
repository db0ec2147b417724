import { describe, expect, it } from 'vitest';
import { createdAtMost, storedUpdatedAt } from '../../src/engine/index/updated-bounds';

describe('the created_at bound an updated_at condition implies', () => {
	it.for([
		['no updated bound, createdAt order', {}, 'createdAt', undefined, undefined],
		['a createdAt cursor bounds nothing more (the walk is keyset already)', {}, 'createdAt', { at: 50, id: 'x' }, undefined],
		['updatedBefore (exclusive): created before it', { updatedBefore: 100 }, 'createdAt', undefined, 99],
		['an updatedAt cursor: created at or before its updated_at', {}, 'updatedAt', { at: 50, id: 'x' }, 50],
		['both: the tighter', { updatedBefore: 40 }, 'updatedAt', { at: 50, id: 'x' }, 39],
		['both, the cursor tighter', { updatedBefore: 400 }, 'updatedAt', { at: 50, id: 'x' }, 50],
	] as const)('%s', ([, filters, order, after, bound]) => {
		expect(createdAtMost(filters, order, after)).toBe(bound);
	});

	it('stores an updated_at never before its created_at, so the bound holds when a clock steps back', () => {
		expect(storedUpdatedAt({ createdAt: 100, updatedAt: 150 })).toBe(150);
		expect(storedUpdatedAt({ createdAt: 100, updatedAt: 97 })).toBe(100);
	});
});
