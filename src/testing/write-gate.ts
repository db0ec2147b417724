import type { InstanceStore } from '../engine/storage/store';

/** Every method of `InstanceStore` that changes durable state. */
export const WRITE_METHODS = [
	'writeInstance',
	'writeStep',
	'writeStepWithRecord',
	'insertStep',
	'deleteSteps',
	'setWakeup',
	'deleteWakeup',
	'deleteWakeupsDue',
	'deleteAllWakeups',
	'appendEvent',
	'deleteEvent',
	'deleteAllEvents',
	'dropEvents',
	'writeEventKey',
	'appendHistory',
	'writeOutbox',
	'ackOutbox',
	'deferOutbox',
	'markOutboxBacklogged',
	'writeInlineRow',
	'deleteInline',
	'deleteUnpublishedInline',
] as const satisfies readonly (keyof InstanceStore)[];

export type WriteMethod = (typeof WRITE_METHODS)[number];

/** Decides, write by write, whether a write reaches durable storage. */
export interface WriteGate {
	/** Called before every write; `false` discards it (the isolate that made it is dead). */
	admit(method: WriteMethod, args: readonly unknown[]): boolean;
}

const writes = new Set<string>(WRITE_METHODS);

/**
 * One isolate's view of an instance's durable storage: reads go through,
 * writes go through only while the gate admits them. A crashed isolate's code
 * may keep running for a while (JavaScript cannot stop it), but nothing it
 * writes afterwards becomes durable, exactly as when a real isolate dies.
 */
export function gatedStore(durable: InstanceStore, gate: WriteGate): InstanceStore {
	// Each method is wrapped once (per function: a test may replace one), not on every call.
	const wrapped = new Map<(...args: unknown[]) => unknown, (...args: unknown[]) => unknown>();
	return new Proxy(durable, {
		get(target, property, receiver) {
			const value: unknown = Reflect.get(target, property, receiver);
			if (typeof value !== 'function') return value;
			const fn = value as (...args: unknown[]) => unknown;
			let method = wrapped.get(fn);
			if (!method) {
				method =
					typeof property === 'string' && writes.has(property)
						? (...args: unknown[]) => (gate.admit(property as WriteMethod, args) ? fn.apply(target, args) : undefined)
						: fn.bind(target);
				wrapped.set(fn, method);
			}
			return method;
		},
	});
}
