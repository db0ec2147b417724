import { ErrorCode, ShardflowError } from '../support/errors';
import { outboxBackoffMs } from '../support/timing';
import { SingleFlight } from '../support/single-flight';
import type { GrantAnswer } from './concurrency-slot';

/** One instance known to a limiter: a holder of a slot, or a waiter in arrival order (`seq`). */
export interface LimiterRow {
	id: string;
	seq: number;
	state: 'waiting' | 'holding';
	requestedAt: number;
	grantedAt: number | null;
	notifyAttempts: number;
	/** A grant not yet acknowledged by the instance is delivered again at this time; null once it has. */
	notifyAt: number | null;
}

/** A limiter's storage: synchronous, like Durable Object SQLite (see store.ts). */
export interface LimiterStore {
	get(id: string): LimiterRow | undefined;
	put(row: LimiterRow): void;
	remove(id: string): void;
	holding(): number;
	/** The oldest waiters first. */
	waiters(limit: number): LimiterRow[];
	/** Grants not yet acknowledged, earliest due first. */
	unnotified(): LimiterRow[];
	nextSeq(): number;
	all(): LimiterRow[];
	transaction<T>(fn: () => T): T;
}

export interface LimiterHost {
	store: LimiterStore;
	now(): number;
	/** The type's limit in the deployed code. */
	limit(): number;
	setAlarm(at: number | undefined): void;
	/**
	 * Tells the instance it holds a slot now (it starts). NOT_FOUND: the instance is gone; `declined`:
	 * it no longer wants the slot (terminated meanwhile). Either way the slot goes to the next in line.
	 * An instance of an older build answers nothing, which counts as accepted.
	 */
	grant(id: string): Promise<GrantAnswer | void | null>;
	background(work: Promise<unknown>): void;
	/** Called when nobody holds or waits and no grant is in flight: the limiter's storage can be freed. */
	idle(): void;
}

/** What `GET /workflows/...` tools can read from a limiter. */
export interface LimiterInfo {
	limit: number;
	holders: string[];
	/** Waiters in the order they will start. */
	waiting: string[];
}

/**
 * The limiter of one concurrency key (`__limit:<type>:<key>`): at most
 * `limit` holders; others wait in arrival order and are granted a slot, oldest
 * first, as holders release theirs. A grant is written before it is delivered
 * and delivered until the instance acknowledges it (retried from the alarm),
 * so a crash of the limiter never loses one. An instance that no longer exists
 * (NOT_FOUND) loses its place, so its slot cannot leak.
 */
export class LimiterEngine {
	/** The delivery of due grants (one at a time; a request meanwhile makes it go round again). */
	private readonly delivery: SingleFlight;

	constructor(private readonly host: LimiterHost) {
		this.delivery = new SingleFlight({
			background: (flight) => host.background(flight),
			round: () => this.deliverDue(),
			after: () => {
				this.rearm();
				// A key nobody uses any more keeps nothing: every distinct key would otherwise leave an object for good.
				if (this.host.store.all().length === 0) this.host.idle();
			},
		});
	}

	acquire(id: string): 'holding' | 'waiting' {
		const known = this.host.store.get(id);
		if (known) return known.state;
		const now = this.host.now();
		const holding = this.host.store.holding() < this.host.limit() && this.host.store.waiters(1).length === 0;
		const row: LimiterRow = {
			id, seq: this.host.store.nextSeq(), state: holding ? 'holding' : 'waiting', requestedAt: now, grantedAt: holding ? now : null, notifyAttempts: 0, notifyAt: null,
		};
		this.host.store.put(row);
		// Slots free while others wait (the limit was raised by a deploy): the oldest take them.
		if (!holding && this.host.store.holding() < this.host.limit()) this.alarm();
		return row.state;
	}

	release(id: string): void {
		this.host.store.transaction(() => {
			this.host.store.remove(id);
			this.promote();
		});
		this.deliver();
	}

	info(): LimiterInfo {
		const rows = this.host.store.all().sort((a, b) => a.seq - b.seq);
		return { limit: this.host.limit(), holders: rows.filter((r) => r.state === 'holding').map((r) => r.id), waiting: rows.filter((r) => r.state === 'waiting').map((r) => r.id) };
	}

	/** The alarm: grants a raised limit may allow, then every grant due for delivery. */
	alarm(): void {
		this.host.store.transaction(() => this.promote());
		this.deliver();
	}

	/** Turns the oldest waiters into holders while slots are free (the grants are delivered after). */
	private promote(): void {
		const free = this.host.limit() - this.host.store.holding();
		if (free <= 0) return;
		const now = this.host.now();
		for (const row of this.host.store.waiters(free)) this.host.store.put({ ...row, state: 'holding', grantedAt: now, notifyAt: now });
	}

	private deliver(): void {
		this.delivery.request();
	}

	private async deliverDue(): Promise<void> {
		const now = this.host.now();
		const due = this.host.store.unnotified().filter((row) => row.notifyAt! <= now);
		await Promise.all(due.map((row) => this.grant(row)));
	}

	private async grant(row: LimiterRow): Promise<void> {
		try {
			const answer = await this.host.grant(row.id);
			// A terminated instance declines: its place goes now, so the slot never waits on its release.
			if (answer === 'declined') return this.passOn(row.id);
			const current = this.host.store.get(row.id);
			if (current?.state === 'holding') this.host.store.put({ ...current, notifyAt: null });
		} catch (error) {
			// The instance is gone (deleted): its place goes, and the slot to the next waiter.
			if (error instanceof ShardflowError && error.code === ErrorCode.NotFound) return this.passOn(row.id);
			const current = this.host.store.get(row.id);
			if (current?.state !== 'holding') return;
			const attempts = current.notifyAttempts + 1;
			this.host.store.put({ ...current, notifyAttempts: attempts, notifyAt: this.host.now() + outboxBackoffMs(attempts) });
		}
	}

	/** The instance that was granted the slot does not take it: its place goes, and the slot to the oldest waiter. */
	private passOn(id: string): void {
		this.host.store.transaction(() => {
			this.host.store.remove(id);
			this.promote();
		});
		this.deliver();
	}

	private rearm(): void {
		const next = this.host.store.unnotified()[0]?.notifyAt ?? undefined;
		this.host.setAlarm(next ?? undefined);
	}
}
