import { SMALL_RESULT_BYTES } from '../support/limits';
import type { InstanceStore, StepMeta, StepRow } from '../storage/store';

/** What the step rows read of a store: metadata pages and single results. */
type StepReader = Pick<InstanceStore, 'readStepMeta' | 'readStepResults'>;

/**
 * Results a pass keeps in memory at most, summed: small results up to this
 * total stay beside their rows; every other result is read from storage when
 * a replayed step needs it and dropped again after.
 */
export const KEPT_RESULT_BYTES = 4 * 1024 * 1024;

/** Rows the store reads at once, in order, when a pass loads its steps. */
const LOAD_PAGE = 1000;

/**
 * The step rows of one pass, without the large results. A pass needs every
 * row's metadata (what was reached, in which order, with which outcome), but a
 * result only when its own step replays it, so memory stays flat however
 * large the history grows: an isolate has 128 MB in production, shared by
 * every object in it (docs/deploying.md "Production limits"). A result of at most
 * `SMALL_RESULT_BYTES` stays beside its row while the kept results total less
 * than `KEPT_RESULT_BYTES`; any other is read by `get` from storage, one step
 * at a time, and not kept. `values()` gives rows whose large results are null:
 * read a result through `get`.
 */
export class StepRows {
	private readonly rows = new Map<string, StepRow>();
	/** Keys whose result lives in storage only. */
	private readonly stored = new Set<string>();
	private keptBytes = 0;

	constructor(private store: StepReader) {}

	/** Reads large results through `store` from now on: a pass's guarded store (pass-storage.ts). */
	readThrough(store: StepReader): this {
		this.store = store;
		return this;
	}

	/** Every step row of the instance, its small results with it, read page by page. */
	static load(store: StepReader): StepRows {
		const rows = new StepRows(store);
		for (const { resultBytes, smallResult, ...meta } of stepMeta(store)) {
			const small = smallResult !== undefined && rows.keptBytes + resultBytes <= KEPT_RESULT_BYTES;
			rows.rows.set(meta.key, { ...meta, result: small ? smallResult : null });
			if (small) rows.keptBytes += resultBytes;
			else if (resultBytes > 0) rows.stored.add(meta.key);
		}
		return rows;
	}

	get size(): number {
		return this.rows.size;
	}

	has(key: string): boolean {
		return this.rows.has(key);
	}

	/** The row with its result (read from storage when it is not kept). */
	get(key: string): StepRow | undefined {
		const row = this.rows.get(key);
		if (!row || !this.stored.has(key)) return row;
		return { ...row, result: this.store.readStepResults([row]).get(key) ?? null };
	}

	/** Remembers a row the pass wrote; a large result is left to storage, where the row's write put it. */
	set(key: string, row: StepRow): this {
		const previous = this.rows.get(key);
		if (previous && !this.stored.has(key)) this.keptBytes -= previous.result?.length ?? 0;
		const bytes = row.result?.length ?? 0;
		// Length in UTF-16 units: at most the UTF-8 size for the ASCII that JSON mostly is, and a bound either way.
		if (bytes > SMALL_RESULT_BYTES || this.keptBytes + bytes > KEPT_RESULT_BYTES) {
			this.rows.set(key, { ...row, result: null });
			this.stored.add(key);
		} else {
			this.rows.set(key, row);
			this.stored.delete(key);
			this.keptBytes += bytes;
		}
		return this;
	}

	/** The rows in the order they were added, large results null. */
	values(): IterableIterator<StepRow> {
		return this.rows.values();
	}
}

/** Every step's metadata (a result of at most `SMALL_RESULT_BYTES` with it), in seq order, read a page at a time. */
export function* stepMeta(store: StepReader): Generator<StepMeta> {
	for (let afterSeq = -1; ; ) {
		const page = store.readStepMeta({ afterSeq, limit: LOAD_PAGE });
		yield* page;
		if (page.length < LOAD_PAGE) return;
		afterSeq = page.at(-1)!.seq;
	}
}

/** Every step row with its result only when small (null otherwise): for readers that need no large result. */
export function* stepRowsWithSmallResults(store: StepReader): Generator<StepRow> {
	for (const { resultBytes: _bytes, smallResult, ...meta } of stepMeta(store)) yield { ...meta, result: smallResult ?? null };
}
