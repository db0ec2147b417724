import type { EventKeyRow, EventRow } from '../engine/storage/store';
import { KV, pack, packedBytes, seqKey, seqOf, unpack, type Packed } from './compact-keys';

const UNREAD = Symbol('unread');
type StoredEvent = { name: string; payload: Packed; receivedAt: number };
type StoredEventKey = { name: string; digest: string; at: number; n: number };

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
			this.lastEventSeq = 0;
			for (const [key] of this.kv.list({ prefix: KV.event, reverse: true, limit: 1 })) this.lastEventSeq = seqOf(key, KV.event);
		}
		this.lastEventSeq++;
		this.put(seqKey(KV.event, this.lastEventSeq), { name, payload: pack(payload), receivedAt } satisfies StoredEvent);
		this.noEvents = false;
	}

	private *bufferedEvents(): Iterable<[string, StoredEvent]> {
		if (!this.noEvents) yield* this.kv.list<StoredEvent>({ prefix: KV.event });
	}

	oldestEvent(name: string): EventRow | undefined {
		for (const [key, event] of this.bufferedEvents()) if (event.name === name) return { seq: seqOf(key, KV.event), name, payload: unpack(event.payload), receivedAt: event.receivedAt };
		return undefined;
	}

	deleteEvent(seq: number): void {
		this.kv.delete(seqKey(KV.event, seq));
	}

	deleteAllEvents(): void {
		for (const [key] of [...this.bufferedEvents()]) this.kv.delete(key);
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
		for (const [key] of [...this.bufferedEvents()]) {
			this.kv.delete(key);
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
