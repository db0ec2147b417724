import { describeThrown } from '../engine/support/thrown-value';
import { SPAN, type Tracer } from '../engine/support/tracer';

/**
 * Runs an RPC call on an instance (a create, an event, a control, a read) inside a
 * `shardflow.<call>` span, so the caller's trace shows what it asked and the pass it started
 * nests below. Untraced, it is `fn()` (not even a promise more).
 */
export function tracedCall<T>(call: string, instanceId: string | undefined, fn: () => T | Promise<T>, tracer: Tracer | undefined): T | Promise<T> {
	if (!tracer) return fn();
	return tracer.run(`shardflow.${call}`, { [SPAN.call]: call, [SPAN.instanceId]: instanceId }, (span) => {
		if (!span) return fn();
		return (async () => {
			try {
				const value = await fn();
				span.set({ [SPAN.outcome]: 'ok' });
				return value;
			} catch (error) {
				span.fail(describeThrown(error));
				throw error;
			} finally {
				span.end();
			}
		})();
	});
}
