/**
 * Failed passes per instance id, for the backoff of the replay loop. Per isolate rather than
 * per engine: an object evicted between two failing passes (an idle one is evicted within
 * seconds locally) comes back as a new engine in the same isolate and keeps its backoff.
 * Bounded: the oldest entries go first.
 */
export class PassFailures {
	private readonly byId = new Map<string, { failures: number; retryAt: number }>();

	constructor(private readonly maxKept = 1000) {}

	/** Passes of `id` that failed in a row (threw outside run(): storage, registry, bug). */
	failures(id: string): number {
		return this.byId.get(id)?.failures ?? 0;
	}

	/** When the next pass of `id` may run after its failures (0: now). */
	retryAt(id: string): number {
		return this.byId.get(id)?.retryAt ?? 0;
	}

	note(id: string, failures: number, retryAt: number): void {
		this.byId.delete(id);
		this.byId.set(id, { failures, retryAt });
		if (this.byId.size > this.maxKept) this.byId.delete(this.byId.keys().next().value!);
	}

	/** A pass of `id` ended: its run of failures is over. */
	clear(id: string): void {
		this.byId.delete(id);
	}
}

/** The isolate's record, shared by every engine of the isolate (see above). */
export const isolatePassFailures = new PassFailures();
