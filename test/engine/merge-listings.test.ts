import { describe, expect, it } from 'vitest';
import { compareIn, positionOf, type TimeOrder as ListOrder, type ListPosition } from '../../src/engine/index/index-query';
import { firstBatchOf, mergeListings } from '../../src/engine/index/merge-listings';

type Row = { id: string; createdAt: number; updatedAt: number; source: number };

/** A seeded generator (mulberry32), so a failing case can be run again. */
function random(seed: number) {
	return () => {
		seed = (seed + 0x6d2b79f5) | 0;
		let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
		t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}

/** Sources of rows with few distinct timestamps (ties on the order key) and ids copied into a second source. */
function sources(seed: number) {
	const next = random(seed);
	const count = 1 + Math.floor(next() * 40);
	const rows: Row[][] = Array.from({ length: count }, () => []);
	const skew = next() < 0.3 ? Math.floor(next() * count) : -1;
	for (let i = 0; i < Math.floor(next() * 600); i++) {
		const createdAt = Math.floor(next() * 50);
		const source = skew >= 0 && next() < 0.8 ? skew : Math.floor(next() * count);
		const row = { id: `r-${String(i).padStart(3, '0')}`, createdAt, updatedAt: createdAt + Math.floor(next() * 5), source };
		rows[source]!.push(row);
		// A copy of the same entry in another source (resizing), older in updatedAt.
		const copyTo = Math.floor(next() * count);
		if (next() < 0.2 && copyTo !== source) rows[copyTo]!.push({ ...row, updatedAt: row.updatedAt - 1, source: copyTo });
	}
	return rows;
}

/** What merging every source's whole listing gives: the first `limit` rows and the copies of the last one's id next to them. */
function reference(all: Row[][], order: ListOrder, limit: number, after: ListPosition | undefined) {
	const key = (r: Row) => r[order];
	const rows = all.flat().filter((r) => !after || key(r) < after.at || (key(r) === after.at && r.id < after.id)).sort(compareIn(order));
	let end = Math.min(limit, rows.length);
	while (end > 0 && end < rows.length && rows[end]!.id === rows[end - 1]!.id) end++;
	return { window: rows.slice(0, end), beyond: rows.length > end };
}

const bySource = (rows: Row[], order: ListOrder) => [...rows].sort((a, b) => compareIn(order)(a, b) || a.source - b.source);

function reader(all: Row[][], order: ListOrder, asked: number[], perSource = new Map<number, number>()) {
	return async (source: number, after: ListPosition | undefined, limit: number) => {
		asked.push(limit);
		perSource.set(source, (perSource.get(source) ?? 0) + 1);
		const rows = all[source]!.filter((r) => !after || r[order] < after.at || (r[order] === after.at && r.id < after.id));
		return rows.sort(compareIn(order)).slice(0, limit);
	};
}

describe('mergeListings', () => {
	it.for(Array.from({ length: 60 }, (_, seed) => seed))('gives the window of a merge of every whole listing, page after page (seed %i)', async (seed) => {
		const all = sources(seed);
		const ids = all.map((_, n) => n);
		for (const order of ['createdAt', 'updatedAt'] as const) {
			for (const limit of [1, 3, 17, 1000]) {
				let after: ListPosition | undefined;
				for (let page = 0; page < 700; page++) {
					const asked: number[] = [];
					const perSource = new Map<number, number>();
					const merged = await mergeListings(ids, { limit, order, after }, reader(all, order, asked, perSource));
					const expected = reference(all, order, limit, after);
					// Copies of one entry that tie in the order (createdAt) may come in either order, as they did before.
					expect(bySource(merged.window, order)).toEqual(bySource(expected.window, order));
					if (expected.beyond) expect(merged.more).toBe(true);
					const firstBatch = firstBatchOf(limit, all.length);
					const rounds = Math.max(...perSource.values());
					expect(rounds).toBeLessThanOrEqual(2 + Math.floor(Math.log2(limit / firstBatch)));
					const requested = asked.reduce((a, b) => a + b, 0);
					expect(requested).toBeLessThanOrEqual(all.length * firstBatch + (rounds - 1) * (2 * limit + all.length + 1));
					const last = merged.window.at(-1);
					if (!merged.more || !last) break;
					after = positionOf(last, order);
				}
			}
		}
	});

	it('asks a source again only while its last row is ahead of the page, for as many rows as it gave', async () => {
		// Source 0 holds rows 0..99 (newest), source 1 rows 100..199: a page of 10 needs source 0 only.
		const all: Row[][] = [0, 1].map((s) => Array.from({ length: 100 }, (_, i) => ({ id: `x-${s}-${i}`, createdAt: 1000 - (s * 100 + i), updatedAt: 0, source: s })));
		const asks: [number, number][] = [];
		const merged = await mergeListings([0, 1], { limit: 10, order: 'createdAt' }, async (source, after, limit) => {
			asks.push([source, limit]);
			return reader(all, 'createdAt', [])(source, after, limit);
		});
		expect(merged.window.map((r) => r.id)).toEqual(all[0]!.slice(0, 10).map((r) => r.id));
		expect(merged.more).toBe(true);
		// 5 + 4 each, then source 0 alone for the last row of the page and the one after it.
		expect(asks).toEqual([[0, 9], [1, 9], [0, 2]]);
	});

	it.for([
		['one source', 1, 1],
		['256 sources, one holding every row', 256, 2],
	] as const)('answers a page of 1000 from %s in %i round(s)', async ([, count, expected]) => {
		const all: Row[][] = Array.from({ length: count }, () => []);
		all[0] = Array.from({ length: 3000 }, (_, i) => ({ id: `o-${i}`, createdAt: 5000 - i, updatedAt: 0, source: 0 }));
		const asked: number[] = [];
		const perSource = new Map<number, number>();
		const merged = await mergeListings(all.map((_, n) => n), { limit: 1000, order: 'createdAt' }, reader(all, 'createdAt', asked, perSource));
		expect(merged.window.map((r) => r.id)).toEqual(all[0].slice(0, 1000).map((r) => r.id));
		expect(merged.more).toBe(true);
		expect(Math.max(...perSource.values())).toBe(expected);
		expect(perSource.get(0)).toBe(expected);
	});
});
