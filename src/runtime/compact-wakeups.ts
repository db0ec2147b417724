import { KV } from './compact-keys';

const UNREAD = Symbol('unread');

/**
 * A compact instance's wake-ups (compact-instance-store.ts): a key per step key (`w:<key>`), and the earliest
 * of them as this store last knew it (undefined: none; UNREAD: read it), forgotten when a transaction fails.
 */
export class CompactWakeups {
	private earliest: number | undefined | typeof UNREAD = UNREAD;

	constructor(
		private readonly kv: SyncKvStorage,
		private readonly put: (key: string, value: unknown) => void,
	) {}

	/** A new object: none. */
	startEmpty(): void {
		this.earliest = undefined;
	}

	forget(): void {
		this.earliest = UNREAD;
	}

	setWakeup(key: string, at: number): void {
		this.put(KV.wakeup + key, at);
		this.earliest = this.earliest === undefined ? at : UNREAD;
	}

	deleteWakeup(key: string): void {
		if (this.earliest === undefined) return;
		if (this.kv.delete(KV.wakeup + key)) this.earliest = UNREAD;
	}

	takeWakeup(key: string): boolean {
		if (this.earliest === undefined) return false;
		const taken = this.kv.delete(KV.wakeup + key);
		if (taken) this.earliest = UNREAD;
		return taken;
	}

	deleteWakeupsDue(now: number, spare: ReadonlySet<string>): void {
		if (this.earliest === undefined || (this.earliest !== UNREAD && this.earliest > now)) return;
		for (const [key, at] of [...this.kv.list<number>({ prefix: KV.wakeup })]) if (at <= now && !spare.has(key.slice(KV.wakeup.length))) this.kv.delete(key);
		this.earliest = UNREAD;
	}

	deleteAllWakeups(): void {
		if (this.earliest !== undefined) for (const [key] of [...this.kv.list({ prefix: KV.wakeup })]) this.kv.delete(key);
		this.earliest = undefined;
	}

	earliestWakeup(): number | undefined {
		if (this.earliest === UNREAD) {
			let earliest: number | undefined;
			for (const [, at] of this.kv.list<number>({ prefix: KV.wakeup })) if (earliest === undefined || at < earliest) earliest = at;
			this.earliest = earliest;
		}
		return this.earliest;
	}
}
