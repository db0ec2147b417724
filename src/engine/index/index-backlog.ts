import type { IndexEntry } from './index-entry';

/**
 * The per-type delivery backlog as the engine sees it. Instances hold their
 * outboxes individually, so an instance whose index delivery fails registers
 * itself once in its type's backlog object and deregisters once a delivery
 * succeeds. A healthy delivery never touches the backlog: it costs nothing
 * until something fails.
 */
export interface BacklogPort {
	/** Registers `entry.id` as behind since `since`; an existing registration keeps its earlier `since`. */
	add(entry: IndexEntry, since: number): Promise<void>;
	remove(entry: IndexEntry): Promise<void>;
}

/** What a type's backlog reports (`GET /types`). */
export interface BacklogSummary {
	/** Instances whose delivery has failed at least once and has not succeeded since. */
	pending: number;
	/** `since` of the longest-waiting one, or null when nothing is pending. */
	oldestSince: number | null;
	/** Up to `BACKLOG_SAMPLE` ids, longest-waiting first (each can be reindexed by id). */
	oldest: { id: string; since: number }[];
}

export const BACKLOG_SAMPLE = 5;

// The backlog object's name is built and parsed in object-names.ts.

/** An outbox's pending entry (storage's `OutboxRow`), as far as its delivery reads it. */
interface PendingDelivery {
	entry: IndexEntry;
	backloggedSince?: number | null;
}

/** The instance side of a delivery; `store` names the one store method it calls, as index/ sits below storage/. */
interface DeliveryHost {
	store: { markOutboxBacklogged(since: number | null): void };
	backlog?: BacklogPort;
	sendIndexEntry(entry: IndexEntry): Promise<void>;
	now(): number;
}

/**
 * Sends the pending entry and, if this instance is registered in the backlog,
 * deregisters it. Both must succeed for the delivery to count: a failed
 * deregistration is retried with the entry (whose second write changes nothing).
 */
export async function deliverTracked(host: DeliveryHost, pending: PendingDelivery): Promise<void> {
	await host.sendIndexEntry(pending.entry);
	if (pending.backloggedSince == null || !host.backlog) return;
	await host.backlog.remove(pending.entry);
	host.store.markOutboxBacklogged(null);
}

/**
 * After a failed delivery: registers the instance in the backlog, once per
 * episode of failures (the mark on the outbox row survives newer entries and
 * evictions). A failure to register is ignored; the next failure tries again.
 */
export async function noteFailedDelivery(host: DeliveryHost, pending: PendingDelivery): Promise<void> {
	if (pending.backloggedSince != null || !host.backlog) return;
	// The time of the first failure: when the index is known to be behind (a republished entry may be old).
	const since = host.now();
	try {
		await host.backlog.add(pending.entry, since);
		host.store.markOutboxBacklogged(since);
	} catch {
		// the backlog is only a report: delivery retries go on without it
	}
}
