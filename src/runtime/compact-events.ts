import type { EventKeyRow, EventRow } from '../engine/storage/store';
import { KV, pack, packedBytes, seqKey, seqOf, unpack, type Packed } from './compact-keys';

const UNREAD = Symbol('unread');
type StoredEvent = { name: string; payload: Packed; receivedAt: number };
type StoredEventKey = { name: string; digest: string; at: number; n: number };
/** An event the instance record holds (storage format 5): its seq with it, since it has no key. */
export type HeldEvent = StoredEvent & { seq: number };

/**
 * The events the instance record holds (storage format 5, compact-parts.ts `mayHoldEvent`): an event that arrives while the
 * instance waits rides in the put of the record that records its arrival, and leaves it with the put that records its
 * consumption, instead of a key put and deleted.
 */
export interface RecordEvents {
	held(): readonly HeldEvent[];
	/** May this event ride in the record (its put at the transaction's end)? */
	mayHold(name: string, payload: string | null): boolean;
	hold(event: HeldEvent): void;
	/** Takes the event out of the record if it holds it. */
	release(seq: number): boolean;
}

/**
 * A compact instance's buffered events (`e:<seq>`), the count of those dropped (`d`) and the idempotency keys of
 * event sends (`k:<key>`) (compact-instance-store.ts); what it knows without reading (no event buffered, the last
 * seq, the dropped count) is forgotten when a transaction fails.
 */
export class CompactEvents {
	private lastEventSeq: number | typeof UNREAD = UNREAD;
	private noEvents = false;
	private dropped: number | typeof UNREAD = UNREAD;

	constructor(
		private readonly kv: SyncKvStorage,
		private readonly put: (key: string, value: unknown) => void,
		private readonly record: RecordEvents,
	) {}

	/** A new object: none buffered, none dropped. */
	startEmpty(): void {
		this.lastEventSeq = 0;
		this.noEvents = true;
		this.dropped = 0;
	}

	forget(): void {
		this.lastEventSeq = UNREAD;
		this.noEvents = false;
		this.dropped = UNREAD;
	}

	appendEvent(name: string, payload: string | null, receivedAt: number): void {
		if (this.lastEventSeq === UNREAD) {
			let last = 0;
			for (const [key] of this.kv.list({ prefix: KV.event, reverse: true, limit: 1 })) last = seqOf(key, KV.event);
			for (const event of this.record.held()) last = Math.max(last, event.seq);
			this.lastEventSeq = last;
		}
		this.lastEventSeq++;
		if (this.record.mayHold(name, payload)) return this.record.hold({ seq: this.lastEventSeq, name, payload: pack(payload), receivedAt });
		this.put(seqKey(KV.event, this.lastEventSeq), { name, payload: pack(payload), receivedAt } satisfies StoredEvent);
		this.noEvents = false;
	}

	/** Every buffered event in seq order: those under keys of their own, and those the record holds. */
	private bufferedEvents(): [number, StoredEvent][] {
		const keyed: [number, StoredEvent][] = this.noEvents ? [] : [...this.kv.list<StoredEvent>({ prefix: KV.event })].map(([key, event]) => [seqOf(key, KV.event), event]);
		const held = this.record.held();
		if (held.length === 0) return keyed;
		return [...keyed, ...held.map((event): [number, StoredEvent] => [event.seq, event])].sort((a, b) => a[0] - b[0]);
	}

	oldestEvent(name: string): EventRow | undefined {
		for (const [seq, event] of this.bufferedEvents()) if (event.name === name) return { seq, name, payload: unpack(event.payload), receivedAt: event.receivedAt };
		return undefined;
	}

	deleteEvent(seq: number): void {
		if (!this.record.release(seq)) this.kv.delete(seqKey(KV.event, seq));
	}

	deleteAllEvents(): void {
		for (const [seq] of this.bufferedEvents()) this.deleteEvent(seq);
		this.noEvents = true;
	}

	eventBuffer(name?: string): { count: number; bytes: number } {
		let count = 0;
		let bytes = 0;
		for (const [, event] of this.bufferedEvents()) {
			if (name !== undefined && event.name !== name) continue;
			count++;
			bytes += packedBytes(event.payload);
		}
		if (name === undefined && count === 0) this.noEvents = true;
		return { count, bytes };
	}

	dropEvents(): number {
		let n = 0;
		for (const [seq] of this.bufferedEvents()) {
			this.deleteEvent(seq);
			n++;
		}
		this.noEvents = true;
		if (n === 0) return 0;
		const dropped = this.droppedCount() + n;
		this.put(KV.dropped, dropped);
		this.dropped = dropped;
		return n;
	}

	private droppedCount(): number {
		if (this.dropped === UNREAD) this.dropped = this.kv.get<number>(KV.dropped) ?? 0;
		return this.dropped;
	}

	eventCounts(): { buffered: number; dropped: number } {
		return { buffered: this.eventBuffer().count, dropped: this.droppedCount() };
	}

	readEventKey(key: string): EventKeyRow | undefined {
		const found = this.kv.get<StoredEventKey>(KV.eventKey + key);
		return found && { key, name: found.name, digest: found.digest };
	}

	writeEventKey(row: EventKeyRow, at: number, keep: number): void {
		const kept = [...this.kv.list<StoredEventKey>({ prefix: KV.eventKey })];
		if (!kept.some(([key]) => key === KV.eventKey + row.key)) {
			const n = kept.reduce((max, [, value]) => Math.max(max, value.n), 0) + 1;
			this.put(KV.eventKey + row.key, { name: row.name, digest: row.digest, at, n } satisfies StoredEventKey);
			kept.push([KV.eventKey + row.key, { name: row.name, digest: row.digest, at, n }]);
		}
		// The `keep` most recently remembered stay.
		if (kept.length > keep) for (const [key] of kept.sort((a, b) => a[1].n - b[1].n).slice(0, kept.length - keep)) this.kv.delete(key);
	}
}
