import { dataPoint, EXPORT_BATCH, exportDueAt, lastExportableMinute, type AnalyticsDataPoint } from '../engine/index/metrics-export';
import { minuteOf } from '../engine/index/run-metrics';
import type { IndexMetricsStore } from './index-metrics-store';
import { ShardAlarm } from './shard-alarm';

/** The part of an Analytics Engine dataset binding the export uses (a fake in tests). */
export interface AnalyticsDataset {
	writeDataPoint(point: AnalyticsDataPoint): void;
}

/** The part of a Durable Object's storage the export uses: its alarm (through shard-alarm.ts) and one key. */
export interface ExportStorage {
	getAlarm(): Promise<number | null>;
	setAlarm(at: number): Promise<void>;
	kv: { get<T>(key: string): T | undefined; put<T>(key: string, value: T): void };
}

/** The last minute written, in the shard's key-value storage (this file owns the key). */
const WATERMARK_KEY = 'analytics:exportedThrough';
/** A shard's first export goes back this far (an hour: what it may hold that nothing wrote yet). */
const FIRST_EXPORT_MINUTES = 60;

/**
 * An index shard's export of its run metrics to Workers Analytics Engine (`SHARDFLOW_ANALYTICS`):
 * a data point per minute that counted runs (engine/index/metrics-export.ts has the layout),
 * written by the shard's alarm once the minute has closed. The first write that counts a run arms
 * the alarm; the alarm writes every closed minute since the last it wrote (the watermark, kept in
 * the shard's storage so an evicted shard neither skips nor repeats a minute), and arms again if
 * a later minute counted runs meanwhile. So a shard with steady traffic costs an alarm and a
 * watermark write a minute, and a quiet shard nothing. Without the binding this class is not made.
 * The alarm is the shard's one alarm (shard-alarm.ts), shared with its retention sweep: the export
 * asks for it by a time and, when it fires, says when it is next due.
 */
export class ShardMetricsExport {
	constructor(
		private readonly dataset: AnalyticsDataset,
		private readonly storage: ExportStorage,
		private readonly shard: { type: string; n: number; now: () => number },
		/** The shard's one alarm (its role passes the one its other duties share). */
		readonly shardAlarm: ShardAlarm = new ShardAlarm(storage),
	) {}

	/** After a write that counted a run: makes sure an alarm will write its minute (an alarm due by then stays). */
	async counted(): Promise<void> {
		await this.shardAlarm.ensureBy(exportDueAt(minuteOf(this.shard.now())));
	}

	/**
	 * The alarm: writes the closed minutes not written yet, then moves the watermark past them.
	 * Answers when it is next due (undefined: nothing counted after what it wrote).
	 */
	async alarm(metrics: IndexMetricsStore): Promise<number | undefined> {
		const last = lastExportableMinute(this.shard.now());
		const from = (this.storage.kv.get<number>(WATERMARK_KEY) ?? last - FIRST_EXPORT_MINUTES) + 1;
		const minutes = from <= last ? metrics.minutes(from, last, EXPORT_BATCH) : [];
		for (const { counts, histogram } of minutes) this.dataset.writeDataPoint(dataPoint(this.shard.type, this.shard.n, counts, histogram));
		const full = minutes.length === EXPORT_BATCH;
		const through = full ? minutes.at(-1)!.counts.minute : last;
		if (minutes.length) this.storage.kv.put(WATERMARK_KEY, through);
		// Minutes that counted runs after `through` (the current one, or the rest of a full batch) need another alarm.
		const newest = metrics.newestMinute();
		return newest !== undefined && newest > through ? (full ? this.shard.now() : exportDueAt(newest)) : undefined;
	}
}
