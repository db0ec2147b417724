import { desc, lt } from 'drizzle-orm';
import type { Database } from './object-storage';
import * as schema from '../db/schema';
import type { ScheduleOutcome, ScheduleRun, ScheduleState, ScheduleStore } from '../engine/schedule/schedule-engine';
import type { MissedTicksLog } from '../engine/schedule/missed-ticks-log';

const { scheduleState: s, scheduleRuns: r } = schema;

/**
 * The missed-ticks log's key in the object's key-value storage: one value of at most 97 small
 * entries, 1 row written by a tick that found ticks missed, none otherwise, and no table to
 * create or migrate.
 */
const MISSED_LOG_KEY = 'schedule:missed';

/** A schedule object's storage (`schedule_state`, `schedule_runs`) through Drizzle, and its missed-ticks log in `ctx.storage.kv`. */
export class DrizzleScheduleStore implements ScheduleStore {
	constructor(
		private readonly db: Database,
		private readonly storage: DurableObjectStorage,
	) {}

	read(): ScheduleState | undefined {
		const row = this.db.select().from(s).get();
		return row && { ...row, paused: row.paused === 1 };
	}

	write(state: ScheduleState): void {
		const row = { ...state, paused: state.paused ? 1 : 0 };
		this.db.insert(s).values(row).onConflictDoUpdate({ target: s.type, set: row }).run();
	}

	appendRun(run: ScheduleRun, keep: number): void {
		this.db.insert(r).values(run).onConflictDoUpdate({ target: r.tick, set: run }).run();
		const cutoff = this.db.select({ tick: r.tick }).from(r).orderBy(desc(r.tick)).limit(1).offset(keep - 1).get();
		if (cutoff) this.db.delete(r).where(lt(r.tick, cutoff.tick)).run();
	}

	runs(limit: number): ScheduleRun[] {
		return this.db
			.select()
			.from(r)
			.orderBy(desc(r.tick))
			.limit(limit)
			.all()
			.map((row) => ({ ...row, outcome: row.outcome as ScheduleOutcome }));
	}

	missedLog(): MissedTicksLog {
		return this.storage.kv.get<MissedTicksLog>(MISSED_LOG_KEY) ?? [];
	}

	writeMissedLog(log: MissedTicksLog): void {
		this.storage.kv.put(MISSED_LOG_KEY, log);
	}

	transaction<T>(fn: () => T): T {
		return this.storage.transactionSync(fn);
	}
}

