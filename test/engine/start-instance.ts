import { defineRegistry, type Registry } from '../../src/engine/definition/registry';
import type { EngineLogRecord } from '../../src/engine/support/engine-log';
import { VirtualHost } from '../../src/testing/virtual-host';

/** A registry holding each workflow class under its own type. */
export function registryOf(...classes: { type: string }[]): Registry {
	const defs = Object.fromEntries(classes.map((workflow) => [workflow.type, { workflow }]));
	return defineRegistry(defs as never);
}

/**
 * Creates instance `wf-1` of `type` on a fresh virtual host that keeps every log record
 * (step completions included) in `logs`; with `settle`, waits until the engine is idle.
 */
export async function startInstance(registry: Registry, type: string, payload: unknown = {}, settle = true) {
	const host = new VirtualHost({ registry });
	const logs: EngineLogRecord[] = [];
	host.log = (record) => void logs.push(record);
	host.logStepCompletions = true;
	const engine = host.engine();
	await engine.create('wf-1', type, payload);
	if (settle) await host.idle();
	return { host, engine, logs };
}
