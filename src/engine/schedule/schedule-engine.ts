import { ErrorCode, NotFoundError, ShardflowError } from '../support/errors';
import { outboxBackoffMs } from '../support/timing';
import { compileCron, scheduledInstanceId, type ResolvedSchedule } from './schedule';
import { missedInLastDay, recordMissed, type MissedTicksLog } from './missed-ticks-log';

/** What a schedule object stores (one row). */
export interface ScheduleState {
	type: string;
	/** The cron the stored `nextAt` was computed from: a deploy with another cron is noticed by comparing. */
	cron: string;
	paused: boolean;
	nextAt: number | null;
	lastTickAt: number | null;
	/** The instance the last started tick created (what `overlap: 'skip'` checks). */
	lastInstanceId: string | null;
	/** A tick whose instance is being created: written before the create, cleared with its run record. */
	pendingTick: number | null;
	pendingMissed: number;
	/** Failed attempts at the pending tick (or at the overlap check), for the retry backoff. */
	attempts: number;
	updatedAt: number;
}

/**
 * What a handled tick did. `started`: its instance was created (or already
 * existed, after a crash). `skipped_overlap`: the previous scheduled instance
 * was unfinished (`overlap: 'skip'`). `refused`: the create was refused for
 * good (for example the payload no longer passes the type's schema); the
 * schedule goes on with the next tick.
 */
export type ScheduleOutcome = 'started' | 'skipped_overlap' | 'refused';

export interface ScheduleRun {
	tick: number;
	/** When the tick was handled (later than `tick` after downtime). */
	at: number;
	outcome: ScheduleOutcome;
	instanceId: string | null;
	/** Older ticks missed during downtime that this one stood in for (they were not run). */
	missed: number;
	error: string | null;
}

/** The most recent runs a schedule keeps. */
export const MAX_SCHEDULE_RUNS = 50;
/** Counting missed ticks stops here (a per-second cron down for a week would otherwise count for a long time). */
export const MAX_COUNTED_MISSES = 10_000;

/** A schedule's storage: synchronous, like Durable Object SQLite (see store.ts). */
export interface ScheduleStore {
	read(): ScheduleState | undefined;
	write(state: ScheduleState): void;
	/** Appends a run and keeps only the newest `keep`. */
	appendRun(run: ScheduleRun, keep: number): void;
	/** The newest runs first. */
	runs(limit: number): ScheduleRun[];
	/** What the schedule missed lately (missed-ticks-log.ts); empty when it never missed a tick. */
	missedLog(): MissedTicksLog;
	writeMissedLog(log: MissedTicksLog): void;
	transaction<T>(fn: () => T): T;
}

export interface ScheduleHost {
	store: ScheduleStore;
	now(): number;
	/** Sets the object's single alarm to `at`, or deletes it. */
	setAlarm(at: number | undefined): void;
	/** Creates the instance idempotently (an existing id with the same payload is not an error). */
	createInstance(id: string, type: string, payload: unknown): Promise<void>;
	/** Whether the instance exists and has not finished (completed, errored, terminated). */
	isUnfinished(id: string): Promise<boolean>;
}

/** What `GET /schedules` shows of one schedule. */
export interface ScheduleInfo {
	type: string;
	cron: string;
	overlap: 'skip' | 'allow';
	state: 'active' | 'paused';
	/** The next tick that will run (null while paused). */
	nextRunAt: number | null;
	/** The newest handled ticks first. */
	lastRuns: ScheduleRun[];
	/** Ticks missed in the last day (engine/schedule/missed-ticks-log.ts), however many runs followed them. */
	missedLastDay: number;
}

/** Codes that mean the create will never succeed for this tick: record it and go on. */
const REFUSALS: readonly string[] = [ErrorCode.InvalidPayload, ErrorCode.PayloadMismatch, ErrorCode.TypeMismatch, ErrorCode.InvalidId, ErrorCode.UnknownType];

/**
 * One type's schedule: turns cron ticks into instances, driven by its
 * object's alarm. Pure TypeScript over `ScheduleHost`.
 *
 * Each tick is handled once: its instance id comes from the tick
 * (`scheduledInstanceId`), the tick is written as pending before the create,
 * and the run record and the next tick are written together after it. A crash
 * in between makes the alarm create the same id again, which finds the
 * instance already there.
 *
 * Missed ticks (the object's alarm could not fire: downtime, or the schedule
 * was never woken): only the latest due tick runs, once, late; the older ones
 * are counted in its run record (`missed`) and not run. Ticks while paused are
 * not run either: a resume starts at the next tick after it.
 */
export class ScheduleEngine {
	private readonly definition: ResolvedSchedule | undefined;
	private running: Promise<void> | undefined;

	constructor(
		private readonly host: ScheduleHost,
		definition: ResolvedSchedule | undefined,
		private readonly type: string,
	) {
		this.definition = definition;
	}

	/**
	 * Brings the stored schedule in line with the deployed code and arms the
	 * alarm: creates the state on the first wake, picks up a changed cron (its
	 * next tick from now on), and handles a tick that is due. Called by the
	 * Worker after a deploy, by `GET /schedules` and by the alarm.
	 */
	async wake(): Promise<ScheduleInfo> {
		const state = this.sync();
		if (state && !state.paused && (state.pendingTick !== null || (state.nextAt !== null && state.nextAt <= this.host.now()))) await this.tick();
		return this.info();
	}

	/** The alarm: handles the due tick, if any, then arms the next one. */
	alarm(): Promise<void> {
		return this.tick();
	}

	pause(): ScheduleInfo {
		const state = this.sync(true);
		if (!state.paused) this.write({ ...state, paused: true, nextAt: null });
		this.host.setAlarm(undefined);
		return this.info();
	}

	/** Resumes at the next tick after now: ticks that passed while paused are not run. A pending tick is finished first. */
	async resume(): Promise<ScheduleInfo> {
		const state = this.sync(true);
		if (state.paused) {
			const nextAt = this.cron().after(this.host.now());
			this.write({ ...state, paused: false, nextAt });
			if (state.pendingTick === null) this.host.setAlarm(nextAt ?? undefined);
		}
		return this.wake();
	}

	/** NOT_FOUND unless the deployed code gives this type a schedule. Reads no storage. */
	assertScheduled(): void {
		this.require();
	}

	info(): ScheduleInfo {
		const definition = this.require();
		const state = this.host.store.read();
		return {
			type: definition.type,
			cron: definition.cron,
			overlap: definition.overlap,
			state: state?.paused ? 'paused' : 'active',
			nextRunAt: state?.paused ? null : (state?.nextAt ?? null),
			lastRuns: state ? this.host.store.runs(10) : [],
			missedLastDay: state ? missedInLastDay(this.host.store.missedLog(), this.host.now()) : 0,
		};
	}

	/** One tick at a time: a wake and the alarm arriving together handle it once. */
	private tick(): Promise<void> {
		return (this.running ??= this.handleTick().finally(() => (this.running = undefined)));
	}

	private async handleTick(): Promise<void> {
		const state = this.sync();
		if (!state || state.paused) return;
		const now = this.host.now();
		let pending = state;
		if (state.pendingTick === null) {
			if (state.nextAt === null || state.nextAt > now) return this.host.setAlarm(state.nextAt ?? undefined);
			const cron = this.cron();
			const tick = cron.atOrBefore(now) ?? state.nextAt;
			// A tick already handled is never handled again (a clock that stepped back, a stale next tick).
			if (state.lastTickAt !== null && tick <= state.lastTickAt) {
				const nextAt = cron.after(Math.max(state.lastTickAt, now));
				this.write({ ...state, nextAt, updatedAt: now });
				return this.host.setAlarm(nextAt ?? undefined);
			}
			const missed = countTicks(cron, state.nextAt, tick);
			if (this.definition!.overlap === 'skip' && state.lastInstanceId !== null) {
				let busy: boolean;
				try {
					busy = await this.host.isUnfinished(state.lastInstanceId);
				} catch {
					return this.retryLater(state);
				}
				if (busy) return this.finish(state, { tick, at: now, outcome: 'skipped_overlap', instanceId: null, missed, error: null });
			}
			// Durable before the create: a crash from here on retries this very tick.
			pending = { ...state, pendingTick: tick, pendingMissed: missed, attempts: 0, updatedAt: now };
			this.write(pending);
			this.host.setAlarm(now + outboxBackoffMs(1));
		}
		const tick = pending.pendingTick!;
		const id = scheduledInstanceId(this.type, tick);
		try {
			await this.host.createInstance(id, this.type, this.definition!.payload);
		} catch (error) {
			if (error instanceof ShardflowError && REFUSALS.includes(error.code)) {
				return this.finish(pending, { tick, at: this.host.now(), outcome: 'refused', instanceId: id, missed: pending.pendingMissed, error: `${error.code}: ${error.message}`.slice(0, 1000) });
			}
			return this.retryLater(pending);
		}
		this.finish({ ...pending, lastInstanceId: id }, { tick, at: this.host.now(), outcome: 'started', instanceId: id, missed: pending.pendingMissed, error: null });
	}

	/** The run record and the next tick, in one transaction; then the alarm points at that tick. */
	private finish(state: ScheduleState, run: ScheduleRun): void {
		const nextAt = this.cron().after(Math.max(run.tick, state.nextAt ?? run.tick));
		const current = this.host.store.read()!;
		const next: ScheduleState = { ...state, paused: current.paused, nextAt: current.paused ? null : nextAt, lastTickAt: run.tick, pendingTick: null, pendingMissed: 0, attempts: 0, updatedAt: run.at };
		this.host.store.transaction(() => {
			this.host.store.appendRun(run, MAX_SCHEDULE_RUNS);
			// Only a tick that found ticks missed writes the log: nothing for a healthy schedule.
			if (run.missed > 0) this.host.store.writeMissedLog(recordMissed(this.host.store.missedLog(), run.at, run.missed));
			this.write(next);
		});
		this.host.setAlarm(next.nextAt ?? undefined);
	}

	private retryLater(state: ScheduleState): void {
		const attempts = state.attempts + 1;
		const at = this.host.now() + outboxBackoffMs(attempts);
		this.write({ ...state, attempts, updatedAt: this.host.now() });
		this.host.setAlarm(at);
	}

	/**
	 * The stored state brought in line with the deployed schedule: created on the
	 * first call (when `create`, or when the type has a schedule), its next tick
	 * recomputed when the cron changed. Undefined for a type whose schedule was
	 * removed (its alarm is deleted).
	 */
	private sync(create?: true): ScheduleState;
	private sync(create?: boolean): ScheduleState | undefined;
	private sync(create = false): ScheduleState | undefined {
		const stored = this.host.store.read();
		if (!this.definition) {
			if (create) this.require();
			if (stored) this.host.setAlarm(undefined);
			return undefined;
		}
		const now = this.host.now();
		const { cron } = this.definition;
		if (!stored) {
			const state: ScheduleState = { type: this.type, cron, paused: false, nextAt: this.cron().after(now), lastTickAt: null, lastInstanceId: null, pendingTick: null, pendingMissed: 0, attempts: 0, updatedAt: now };
			this.write(state);
			this.host.setAlarm(state.nextAt ?? undefined);
			return state;
		}
		if (stored.cron !== cron) {
			// A deploy changed the cron: the old ticks not reached yet are gone; the new cron starts from now.
			const state = { ...stored, cron, nextAt: stored.paused ? null : this.cron().after(now), updatedAt: now };
			this.write(state);
			if (state.pendingTick === null) this.host.setAlarm(state.nextAt ?? undefined);
			return state;
		}
		return stored;
	}

	private write(state: ScheduleState): void {
		this.host.store.write(state);
	}

	private cron() {
		return compileCron(this.require().cron);
	}

	private require(): ResolvedSchedule {
		if (!this.definition) throw new NotFoundError(`workflow type "${this.type}" has no schedule (static schedule)`);
		return this.definition;
	}
}

/** Ticks from `from` (a tick) up to but not counting `to`: the ones a late alarm did not run. */
function countTicks(cron: { after(at: number): number | null }, from: number, to: number): number {
	let count = 0;
	for (let at: number | null = from; at !== null && at < to && count < MAX_COUNTED_MISSES; at = cron.after(at)) count++;
	return count;
}
