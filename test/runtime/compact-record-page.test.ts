import { runInDurableObject } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { RECORD_PAGE_BYTES } from '../../src/runtime/compact-folded-steps';
import { storedBytes } from '../../src/runtime/compact-stored-size';
import { stub, uniqueId } from '../helpers';

/**
 * The largest value, in stored bytes (compact-stored-size.ts), that keeps its b-tree page under the instance record's
 * key: a value of the shape `shape(pad)` is put with a pad growing one character at a time, and the object's database
 * grows by an overflow page at the first that does not fit. Pages freed on overwrite stay in the file, so the first
 * growth is the bound.
 */
async function largestInPage(shape: (pad: string) => unknown, from: number): Promise<number> {
	return runInDurableObject(stub(uniqueId('page')), (_, state) => {
		state.storage.kv.put('i', shape(''));
		const start = state.storage.sql.databaseSize;
		let last = 0;
		for (let n = from; n < from + 400; n++) {
			const value = shape('x'.repeat(n));
			state.storage.kv.put('i', value);
			if (state.storage.sql.databaseSize > start) return last;
			last = storedBytes(value);
		}
		throw new Error('no overflow page within 400 characters');
	});
}

describe("the instance record's page (compact-folded-steps.ts RECORD_PAGE_BYTES)", () => {
	it('keeps a record of RECORD_PAGE_BYTES stored bytes in its page, whatever its shape, and one a byte larger takes an overflow page', async () => {
		const shapes: [string, (pad: string) => unknown, number][] = [
			['one string', (pad) => pad, 900],
			['a record of small numbers and short names', (pad) => ({ r: { c: 1796625425736, u: 7, s: 3, v: 3, i: 'layout-compact-mxcwe2pt-0', y: 'step-nap-step', P: '{}' }, h: [{ q: 1, k: 0, t: 0, V: '{}' }], st: [{ q: 1, n: 'before', r: '1', t: 6, f: 0, c: [2, 2], v: 1 }, { q: 2, n: pad }] }), 700],
			['times as doubles and long names', (pad) => ({ createdAt: 1796625425736, updatedAt: 1796625425743, nextAttemptAt: 1796625435743, more: [{ at: 1796625425743, detail: pad }] }), 800],
			['a packed value', (pad) => ({ r: new Uint8Array(200), d: pad }), 650],
		];
		const bounds: Record<string, number> = {};
		for (const [name, shape, from] of shapes) bounds[name] = await largestInPage(shape, from);
		// The same bound in stored bytes for every shape: the size computed is what the runtime stores, to the byte.
		expect(bounds).toEqual(Object.fromEntries(shapes.map(([name]) => [name, RECORD_PAGE_BYTES])));
	});
});
