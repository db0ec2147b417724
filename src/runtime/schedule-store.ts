import { desc, lt } from 'drizzle-orm';
import type { Database } from './object-storage';
import * as schema from '../db/schema';
import type { ScheduleOutcome, ScheduleRun, ScheduleState, ScheduleStore } from '../engine/schedule/schedule-engine';

const { scheduleState: s, scheduleRuns: r } = schema;

/** A schedule object's storage (`schedule_state`, `schedule_runs`) through Drizzle. */
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

	transaction<T>(fn: () => T): T {
		return this.storage.transactionSync(fn);
	}
}

