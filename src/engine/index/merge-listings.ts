import type { IndexEntry } from './index-entry';
import { compareIn, positionOf, type ListOrder, type ListPosition } from './index-query';

/** Rows asked of each shard in the first round beyond its even share of the page. */
export const FIRST_ROUND_MARGIN = 4;

/**
 * What round 1 asks each of `sources`: its even share of the page and a margin, or, from one source,
 * the page and the row after it (which says whether there is a next page), so one round does.
 */
export function firstBatchOf(limit: number, sources: number): number {
	return Math.min(limit + 1, Math.ceil(limit / Math.max(sources, 1)) + FIRST_ROUND_MARGIN);
}

type Row = Pick<IndexEntry, 'id' | 'createdAt' | 'updatedAt'>;

export interface MergedListing<R> {
	/** The page's rows in order: the first `limit` of every source merged, and every copy of the last one's id next to it. */
	window: R[];
	/** Some source may have rows past the window (a source that filled its last batch may have none). */
	more: boolean;
}

/** What one source has answered so far. */
interface Source<S, R> {
	source: S;
	/** Its last row: the keyset of its next batch. */
	last: R | undefined;
	taken: number;
	exhausted: boolean;
}

/**
 * Merges keyset listings of many sources (index shards) into one page without
 * asking each for `limit` rows: what one page over 256 shards held when it did
 * (256,000 rows, ~90 MiB, in a 128 MB isolate).
 *
 * Round 1 asks every source for {@link firstBatchOf}. A later round asks only
 * the sources that filled their last batch and whose last row sorts ahead of
 * the row right after the page (while there is none yet, every source that
 * filled its batch): only they can hold a row of the page, or a row between
 * two copies of its last entry. Each is asked, after its last row, for as many
 * rows as it has given (a batch that doubles), or its share of the rows still
 * missing if that is more, plus what its density so far says it holds of the
 * rest of the page; never for more than could still land up to the row after
 * the page. Rows past that row are dropped after each round.
 *
 * The bound, with S sources and margin m: round 1 asks at most
 * `limit + S x (m + 1)` rows; a later round at most `2 x limit + S + 1` (the
 * doubling batches add up to at most the page, as the sources asked have
 * their rows in it; the density extras are scaled to at most `limit`); at most
 * `2 + floor(log2(limit / first batch))` rounds (the batches double): 8 for
 * 1000 over 256 shards, 2 when one source holds every row, 1 for one source. Held at once: one
 * round's answers and the page.
 *
 * The window is the one a merge of every source's whole listing gives: a
 * source not asked again has its last row at or past the row after the page,
 * so every row it has not given sorts after that row.
 */
export async function mergeListings<S, R extends Row>(
	sources: S[],
	query: { limit: number; order: ListOrder; after?: ListPosition | undefined },
	read: (source: S, after: ListPosition | undefined, limit: number) => Promise<R[]>,
): Promise<MergedListing<R>> {
	const { limit, order } = query;
	const compare = compareIn(order);
	const states: Source<S, R>[] = sources.map((source) => ({ source, last: undefined, taken: 0, exhausted: false }));
	const firstBatch = firstBatchOf(limit, sources.length);
	let asks = states.map((state) => ({ state, n: firstBatch }));
	// The merged rows so far, cut after the first row past the page (its id differs from the page's last):
	// new rows only move the page's end earlier, so a row past that one is never needed again.
	let rows: R[] = [];
	let dropped = false;
	let end = 0;
	while (asks.length > 0) {
		const answers = await Promise.all(
			asks.map(async ({ state, n }) => {
				const after = state.last ? positionOf(state.last, order) : query.after;
				return { state, n, rows: await read(state.source, after, n) };
			}),
		);
		for (const answer of answers) {
			const { state } = answer;
			state.taken += answer.rows.length;
			state.exhausted = answer.rows.length < answer.n;
			state.last = answer.rows.at(-1) ?? state.last;
			rows.push(...answer.rows);
		}
		rows.sort(compare);
		end = windowEnd(rows, limit);
		if (rows.length > end + 1) {
			dropped = true;
			rows = rows.slice(0, end + 1);
		}
		asks = nextAsks(states, rows, end, limit, compare);
	}
	return { window: rows.slice(0, end), more: dropped || rows.length > end || states.some((s) => !s.exhausted) };
}

/**
 * The page's end: `limit` rows, and every copy of the last entry (copies of one id in two shards
 * sort side by side). A page that stopped between them would give the next page's cursor past the
 * copy that is current, and the entry would be missing from the walk.
 */
function windowEnd(rows: Row[], limit: number): number {
	let end = Math.min(limit, rows.length);
	while (end > 0 && end < rows.length && rows[end]!.id === rows[end - 1]!.id) end++;
	return end;
}

/**
 * The sources that may still hold a row of the page, or the row right after it, and how much to
 * ask each. The row after the page (`next`) is needed because it ends the run of copies of the
 * page's last entry: a source's unseen row between two copies would otherwise be skipped.
 */
function nextAsks<S, R extends Row>(states: Source<S, R>[], rows: R[], end: number, limit: number, compare: (a: Row, b: Row) => number) {
	const next = rows[end];
	const behind = states.filter((s) => !s.exhausted && s.last !== undefined && (next === undefined || compare(s.last, next) < 0));
	if (behind.length === 0) return [];
	// A source ahead of `next` has all its rows in the page, its last at `rank`.
	const rank = new Map(rows.map((row, i) => [row, i] as const));
	const missing = next === undefined ? limit + 1 - rows.length : 0;
	const share = Math.ceil(missing / behind.length);
	const asks = behind.map((state) => {
		const at = rank.get(state.last!)!;
		// Positions after its last up to the row after the page (`end`; `limit` while the page is short).
		const room = Math.max(end, limit) - at;
		const base = Math.max(state.taken, share);
		// What it would add to the page at the density it has had so far (a shard holding half the
		// page gets there in two rounds, not in doublings); all such extras together at most `limit`.
		const extra = Math.max(0, Math.ceil((room * state.taken) / (at + 1)) + FIRST_ROUND_MARGIN - base);
		return { state, room, base, extra };
	});
	const extras = asks.reduce((sum, a) => sum + a.extra, 0);
	const scale = extras > limit ? limit / extras : 1;
	return asks.map(({ state, room, base, extra }) => ({ state, n: Math.max(1, Math.min(room, base + Math.floor(extra * scale))) }));
}
