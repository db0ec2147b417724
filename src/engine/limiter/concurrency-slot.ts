/**
 * The instance's side of a concurrency slot (types with `static concurrency`).
 * The instance keeps one row saying where its slot stands, written in the same
 * transaction as the status change it belongs to; a request or a release is
 * then delivered to the limiter (`__limit:<type>:<key>`) and retried from the
 * alarm until the limiter acknowledges it, like an index entry. So a crash never
 * loses a request (the instance would stay queued forever) nor a release (the
 * slot would leak).
 *
 * `requested`: not yet acknowledged by the limiter. `waiting`: queued there; the
 * limiter grants it (`slotGranted`). `held`: the instance may run. `releasing`:
 * the instance finished (or was terminated); the release is being delivered.
 * The row goes once the limiter has the release.
 */
export type SlotState = 'requested' | 'waiting' | 'held' | 'releasing';

export interface SlotRow {
	key: string;
	state: SlotState;
	attempts: number;
	/** When a request or release is retried; null while none is due (waiting, held). */
	nextAttemptAt: number | null;
}

/**
 * How an instance answers its limiter's grant. `declined`: it no longer wants the slot (terminated,
 * or finished, while the grant was on its way, or it never asked in this run): the limiter gives
 * the slot to the next in line at once instead of waiting for the instance's release, which may
 * be late or lost (a crash) or may even have reached the limiter before a late request.
 */
export type GrantAnswer = 'accepted' | 'declined';

/** Where the instance keeps its slot row. Synchronous, and inside the instance store's transactions. */
export interface SlotStore {
	readSlot(): SlotRow | undefined;
	writeSlot(row: SlotRow | undefined): void;
}

/** The limiter as an instance sees it (RPC to `__limit:<type>:<key>`). */
export interface LimiterPort {
	/** Idempotent: an instance already known keeps its place (holding or waiting). */
	acquire(type: string, key: string, id: string): Promise<'holding' | 'waiting'>;
	/** Idempotent: releasing an unknown instance changes nothing. */
	release(type: string, key: string, id: string): Promise<void>;
}
