/**
 * Work that runs one flight at a time: a request while a flight is under way
 * asks it to go round once more instead of starting a second one, so every
 * request is served by a round that begins after it. The replay loop, the
 * index outbox, the concurrency slot and the limiter's grant delivery are all
 * one of these.
 */
export interface SingleFlightOptions {
	/** One round of the work. A request made during it makes the flight go round again. */
	round(): Promise<void>;
	/** Keeps the flight alive after the request that started it returns (the host's `background`). */
	background(flight: Promise<void>): void;
	/** Awaited once before the first round (the replay loop lets the caller's turn finish; the outbox coalesces). */
	before?(): Promise<void>;
	/** Runs once the flight is over and `inFlight` cleared (however it ended): typically re-arms the alarm. */
	after?(): void;
}

export class SingleFlight {
	private flight: Promise<void> | undefined;
	private flying = false;
	private again = false;

	constructor(private readonly options: SingleFlightOptions) {}

	/** The flight under way, if any (await it to wait for the work to settle). */
	get inFlight(): Promise<void> | undefined {
		return this.flight;
	}

	/** Whether a request came in since the current round began (the round may end early for it). */
	get requestedAgain(): boolean {
		return this.again;
	}

	/** Starts a flight, or asks the one under way to go round once more. */
	request(): void {
		if (this.flying) {
			this.again = true;
			return;
		}
		this.flying = true;
		const flight = this.fly();
		// A flight whose only round returned without awaiting is already over.
		if (this.flying) this.flight = flight;
		this.options.background(flight);
	}

	private async fly(): Promise<void> {
		try {
			if (this.options.before) await this.options.before();
			do {
				this.again = false;
				await this.options.round();
			} while (this.again);
		} finally {
			// Cleared in the same turn as the last `again` check, so no request is lost in between.
			this.flying = false;
			this.flight = undefined;
			this.options.after?.();
		}
	}
}
