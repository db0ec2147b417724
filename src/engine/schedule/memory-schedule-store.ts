import type { ScheduleRun, ScheduleState, ScheduleStore } from './schedule-engine';
import type { MissedTicksLog } from './missed-ticks-log';

/** A schedule's storage in memory: for the engine's tests and the Node test kit. */
export class MemoryScheduleStore implements ScheduleStore {
	private state: ScheduleState | undefined;
	private history: ScheduleRun[] = [];
	private missed: MissedTicksLog = [];

	read(): ScheduleState | undefined {
		return this.state && { ...this.state };
	}

	write(state: ScheduleState): void {
		this.state = { ...state };
	}

	appendRun(run: ScheduleRun, keep: number): void {
		this.history = [...this.history.filter((r) => r.tick !== run.tick), { ...run }].sort((a, b) => a.tick - b.tick).slice(-keep);
	}

	runs(limit: number): ScheduleRun[] {
		return [...this.history].reverse().slice(0, limit);
	}

	missedLog(): MissedTicksLog {
		return this.missed;
	}

	writeMissedLog(log: MissedTicksLog): void {
		this.missed = log;
	}

	transaction<T>(fn: () => T): T {
		const saved = { state: this.state, history: this.history, missed: this.missed };
		try {
			return fn();
		} catch (error) {
			Object.assign(this, saved);
			throw error;
		}
	}
}
