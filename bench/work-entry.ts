/**
 * The bench Worker with the work of the throughput scenario's objects counted (`npm run bench:work`,
 * bench/work-ab.mjs): its instances ("o-..." ids, bench/worker.ts `/ours/run`) and the "bench" type's index
 * shards (work-meter.ts), and the whole isolate's timers, read at GET /__work/reading. Everything else is
 * bench/worker.ts as it is, so the same entry serves this tree and, copied beside it, any older build's.
 */
import app, { WorkflowRunner as BenchRunner } from './worker';
import { meterCalls, meterStorage, meterTimers, workReading } from './work-meter';

export * from './worker';

/** The objects of the throughput scenario, by name (in a group, after its part: `eu.eu~o-...`). */
const counted = (name: string | undefined) => {
	const local = name?.includes('~') ? name.slice(name.indexOf('~') + 1) : name;
	return local !== undefined && (local.startsWith('o-') || local.startsWith('__index:bench:'));
};

export class WorkflowRunner extends BenchRunner {
	constructor(...args: ConstructorParameters<typeof BenchRunner>) {
		// Before the engine's storage layer captures `exec` and `kv`: every call it makes is counted.
		if (counted(args[0].id.name)) meterStorage(args[0].storage);
		super(...args);
	}
}
meterCalls(WorkflowRunner.prototype, (self) => counted((self as { ctx: DurableObjectState }).ctx.id.name));
meterTimers();

export default {
	fetch(...args: Parameters<typeof app.fetch>) {
		if (new URL(args[0].url).pathname === '/__work/reading') return Response.json(workReading());
		return app.fetch(...args);
	},
};
