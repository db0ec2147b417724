/**
 * An index shard's one alarm, shared by its duties (the retention sweep, index-shard-retention.ts;
 * the Analytics Engine export, shard-metrics-export.ts). A Durable Object has one alarm, so no duty
 * sets it on its own: a duty asks for it by a time (`ensureBy`, which keeps an earlier alarm), and
 * when it fires each duty runs and says when it is next due, and the role asks for the earliest
 * (`nextShardAlarm`, engine/index/retention-sweep.ts), which an alarm a write asked for meanwhile
 * can only make earlier. An alarm that fires early for a duty finds it
 * not due and the duty answers its time again. Each `setAlarm` is a row written: the time set is
 * remembered, so asking again for a later time costs nothing.
 */
export class ShardAlarm {
	/** The alarm set (null: none; undefined: not read since the object started). */
	private at: number | null | undefined;

	constructor(private readonly storage: Pick<DurableObjectStorage, 'getAlarm' | 'setAlarm'>) {}

	/** The alarm set now (read once per object start). */
	async current(): Promise<number | null> {
		if (this.at === undefined) this.at = await this.storage.getAlarm();
		return this.at;
	}

	/** Makes sure the alarm fires by `at`: sets it only when none is set, or the one set is later. */
	async ensureBy(at: number): Promise<void> {
		const current = await this.current();
		if (current !== null && current <= at) return;
		this.at = at;
		await this.storage.setAlarm(at);
	}

	/** The alarm fired: the runtime consumed it. */
	fired(): void {
		this.at = null;
	}
}
