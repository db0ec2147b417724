import type { DrizzleSqliteDODatabase } from 'drizzle-orm/durable-sqlite';
import type { MetricsDelta } from '../engine/index/run-metrics';
import { isEmptyDelta, mergePending, rollupBound, sumPending, uncountedPending, type MinuteSums, type PendingMetrics } from '../engine/index/pending-metrics';
import { WORKFLOW_STATUSES } from '../engine/support/statuses';
import type { IndexMetricsStore } from './index-metrics-store';
import { MarkedEntries, type MarkRow } from './index-marked-entries';

const LIVE: ReadonlySet<string> = new Set(WORKFLOW_STATUSES);

/**
 * Where the shard's rollup stood when it wrote its first mark, in its key-value storage (this file owns the key):
 * written once in a shard's life. Every rollup after it leaves its watermark on the minute rows it writes
 * (`index_metric_minutes.rolled_to`), so moving it costs no row; the watermark is the newer of the two.
 */
const WATERMARK_KEY = 'metrics:firstMark';

/** An entry row as the write path reads it before writing: enough to find its mark. */
export interface MarkedRow {
	status: string;
	updatedAt: number;
	pendingMetrics: string | null;
}

/** What a write of one entry does to the metrics: the mark it stores, and what it adds to the minute rows at once. */
export interface MarkPlan {
	/** The `pending_metrics` the entry's statement writes (null: none). */
	pending: string | null;
	/** Counts that go into the minute rows now: a write the rollup has already passed. */
	direct?: PendingMetrics;
	/** Whether the write counted a run (the Analytics Engine export arms its alarm after one). */
	counted: boolean;
}

/**
 * An index shard's run metrics, marked on the entries and rolled up once a minute (docs/decisions.md
 * "Run metrics rolled up once a minute per shard"). A delivery that starts or finishes a run stores
 * what it counted on the entry row it writes anyway (`pending_metrics`: no row of its own). The
 * rollup adds every mark of the entries written since the watermark (`updated_at >= watermark`: the
 * entries this object marked, read by id, index-marked-entries.ts) into the minute rows, one row
 * per minute, and moves the watermark, at most once per minute of the shard's clock: on a write, or
 * on the shard's alarm. Reads add the marks not rolled up yet on the fly, so they are never behind.
 *
 * Exact because a mark is rolled up once and only once:
 * - an entry with `updated_at` below the watermark was rolled up: its next write replaces the mark;
 *   at or above, the next write merges into it (a run that completes and restarts before the
 *   rollup keeps both finishes);
 * - a write whose own `updated_at` is below the watermark (a late delivery) would never be found:
 *   it adds its counts (and a mark it replaces) to the minute rows at once, as every write did before;
 * - an entry that leaves (a tombstone: deleted, moved) adds its mark at once;
 * - a row rewritten by a build that does not know the column (a rollback) keeps its mark with the
 *   `u` of the write that made it: counted by the rollup that finds the row if `u` is at or past the
 *   watermark (no rollup counted it), skipped if not (one did): once either way.
 */
export class IndexMetricsRollup {
	/** The watermark (undefined: not read yet; null: none, so no entry has a mark). */
	private rolledUpTo: number | null | undefined;
	/**
	 * Up to where this isolate found no mark past the watermark (in memory only): a rollup that finds
	 * nothing writes nothing, not even the watermark, and is not tried again until a minute closes
	 * or a mark lands below it. Every rollup still starts at the stored watermark.
	 */
	private quietTo = -Infinity;
	/** The entries that may hold a mark not counted yet. */
	private readonly entries: MarkedEntries;

	constructor(
		db: DrizzleSqliteDODatabase,
		private readonly kv: Pick<SyncKvStorage, 'get' | 'put'>,
		private readonly metrics: IndexMetricsStore,
		private readonly now: () => number,
	) {
		this.entries = new MarkedEntries(db);
		metrics.unrolled = () => this.unrolled();
	}

	/** The watermark: every entry last written before it has had its mark rolled up (null: no mark was ever written). */
	watermark(): number | null {
		if (this.rolledUpTo === undefined) {
			const first = this.kv.get<number>(WATERMARK_KEY);
			const rolled = first === undefined ? undefined : this.metrics.rolledTo();
			this.rolledUpTo = first === undefined ? null : Math.max(first, rolled ?? -Infinity);
		}
		return this.rolledUpTo;
	}

	/** The mark of a row that is still to be rolled up (none for a tombstone, or a row or mark the rollup passed). */
	carried(row: MarkedRow | undefined): PendingMetrics | undefined {
		const watermark = this.watermark();
		if (!row || watermark === null || row.status.startsWith('__') || row.updatedAt < watermark) return undefined;
		return uncountedPending(row, watermark);
	}

	/** What the write of an entry at `updatedAt` over `prior` stores and adds (see the class's note). */
	plan(prior: MarkedRow | undefined, delta: MetricsDelta, updatedAt: number): MarkPlan {
		const counted = !isEmptyDelta(delta);
		const mark = mergePending(this.carried(prior), delta, updatedAt);
		if (!mark) return { pending: null, counted };
		// The first mark a shard writes sets the watermark (once per shard), so "no watermark" keeps meaning "no marks".
		let watermark = this.watermark();
		if (watermark === null) {
			watermark = rollupBound(this.now());
			this.kv.put(WATERMARK_KEY, watermark);
			this.rolledUpTo = watermark;
		}
		if (updatedAt < watermark) return { pending: null, direct: mark, counted };
		if (updatedAt < this.quietTo) this.quietTo = watermark;
		return { pending: JSON.stringify(mark), counted };
	}

	/** After the write of entry `id` won: counts what it adds at once, and remembers a mark it stored. */
	wrote(plan: MarkPlan, id: string): void {
		if (plan.pending) this.entries.add(id);
		if (plan.counted) this.metrics.changes++;
		if (plan.direct) this.metrics.add(sumPending([plan.direct]));
	}

	/** An entry leaves (replaced by a tombstone): its mark, if still to be rolled up, goes into the minute rows now. */
	fold(prior: MarkedRow | undefined): void {
		const mark = this.carried(prior);
		if (mark) this.metrics.add(sumPending([mark]));
	}

	/**
	 * Rolls the marks up to the start of the minute `ROLLUP_MARGIN_MS` ago, if that is past the watermark:
	 * one row per minute the marks count in, which carry the new watermark (nothing when it finds no mark).
	 * Answers whether it wrote.
	 * Call inside a transaction (the minute rows and the watermark move together).
	 */
	rollUpIfDue(): boolean {
		if (!this.due()) return false;
		const from = this.watermark()!;
		const to = rollupBound(this.now());
		const { sums, rows } = this.marks(from, to);
		this.quietTo = to;
		// Whatever this rollup passed is counted, or held nothing to count: only rows written at or after `to` stay.
		this.entries.retain(rows, (row) => LIVE.has(row.status) && row.pendingMetrics !== null && row.updatedAt >= to);
		if (sums.size === 0) return false;
		this.metrics.add(sums, to);
		this.rolledUpTo = to;
		return true;
	}

	/** Whether a minute has closed past the watermark since the last rollup that found nothing: a check in memory once the watermark is read. */
	due(): boolean {
		const from = this.watermark();
		return from !== null && !this.entries.knownEmpty() && rollupBound(this.now()) > Math.max(from, this.quietTo);
	}

	/** The counts of the marks not rolled up yet, per minute: what a read adds to the minute rows. */
	unrolled(): Map<number, MinuteSums> {
		const from = this.watermark();
		return from === null ? new Map() : this.marks(from, Number.MAX_SAFE_INTEGER).sums;
	}

	/** The marks of the live entries last written in [from, to), summed per minute: the marked entries read by id. */
	private marks(from: number, to: number): { sums: Map<number, MinuteSums>; rows: MarkRow[] } {
		const sums = new Map<number, MinuteSums>();
		if (this.entries.knownEmpty()) return { sums, rows: [] };
		const rows = this.entries.rows(from);
		const inRange = rows.filter((row) => LIVE.has(row.status) && row.updatedAt >= from && row.updatedAt < to);
		sumPending(inRange.map((row) => uncountedPending(row, from)).filter((mark) => mark !== undefined), sums);
		return { sums, rows };
	}
}
