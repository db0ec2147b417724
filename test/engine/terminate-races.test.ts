import { describe, expect, it } from 'vitest';
import { Workflow, type Step } from '../../src/authoring';
import type { InstanceEngine } from '../../src/engine/instance/instance-engine';
import { InvalidStateError } from '../../src/engine/support/errors';
import { decodeWebhookToken, encodeWebhookToken, importWebhookKey, WEBHOOK_PATH, webhookUrl, type WebhookTarget } from '../../src/engine/webhooks/webhook';
import { VirtualHost } from '../../src/testing/virtual-host';
import { World } from './child-world';
import { registryOf } from './start-instance';

// A terminate races every wait a run can be in (issue 49): whatever completes the wait (an event, a
// webhook's POST, an alarm, a child's outcome) and in whichever order against the terminate, no step
// of the instance starts after its terminate, and every attempt that ran has its record.

/** Runs of the step after the wait, by instance id. */
const ran = new Map<string, number>();
const after = (id: string) => void ran.set(id, (ran.get(id) ?? 0) + 1);
const hookUrls: string[] = [];

class OnEvent extends Workflow {
	static override readonly type = 'on-event';
	static override events = { go: {} };
	async run(step: Step<{ go: {} }>) {
		await step.do('before', () => 1);
		await step.waitForEvent('go');
		await step.do('after', () => after(this.ctx.id));
	}
}

class OnWebhook extends Workflow {
	static override readonly type = 'on-webhook';
	async run(step: Step) {
		const hook = await step.webhook('hook');
		await step.do('send', () => void hookUrls.push(hook.url));
		await hook.wait();
		await step.do('after', () => after(this.ctx.id));
	}
}

class OnAlarm extends Workflow {
	static override readonly type = 'on-alarm';
	async run(step: Step) {
		await step.do('before', () => 1);
		await step.sleep('nap', 1000);
		await step.do('after', () => after(this.ctx.id));
	}
}

class Child extends Workflow {
	static override readonly type = 'race-child';
	static override events = { go: {} };
	async run(step: Step<{ go: {} }>) {
		await step.waitForEvent('go');
		return 1;
	}
}

class OnChild extends Workflow {
	static override readonly type = 'on-child';
	async run(step: Step) {
		await step.invoke('child', Child, { payload: {} });
		await step.do('after', () => after(this.ctx.id));
	}
}

const key = await importWebhookKey('terminate-races-secret');
const registry = registryOf(OnEvent, OnWebhook, OnAlarm, Child, OnChild);

/** A started instance waiting in its wait, and what completes the wait (not awaited: the terminate races it). */
interface Waiting {
	id: string;
	engine: () => InstanceEngine;
	complete: () => Promise<unknown>;
	idle: () => Promise<void>;
}

async function onHost(id: string, type: string, complete: (host: VirtualHost, engine: InstanceEngine) => Promise<unknown>): Promise<Waiting> {
	const host = new VirtualHost({ registry });
	Object.assign(host, { webhooks: { issue: async (target: WebhookTarget) => webhookUrl(await encodeWebhookToken(key, target), 'https://flows.example.com') } });
	const engine = host.engine();
	await engine.create(id, type, {});
	await host.idle();
	return { id, engine: () => engine, complete: () => complete(host, engine), idle: () => host.idle() };
}

const waits: Record<string, (id: string) => Promise<Waiting>> = {
	'an event': (id) => onHost(id, 'on-event', (_, engine) => engine.sendEvent('go', {})),
	"a webhook's POST": (id) =>
		onHost(id, 'on-webhook', async (_, engine) => {
			const url = hookUrls.at(-1)!;
			engine.completeWebhook(await decodeWebhookToken(key, url.slice(url.indexOf(WEBHOOK_PATH) + WEBHOOK_PATH.length)), {});
		}),
	'an alarm that fired': (id) => onHost(id, 'on-alarm', (host, engine) => host.fireAlarm(engine)),
	"a child's outcome": async (id) => {
		const world = new World(registry);
		await world.engine(id).create(id, 'on-child', {});
		await world.idle();
		return { id, engine: () => world.engine(id), complete: () => world.engine(`${id}::child`).sendEvent('go', {}), idle: () => world.idle() };
	},
};

/** Lets `turns` microtask turns, then `macro` macrotasks, go by: the terminate lands at a different point of the wait's completion each time. */
async function after_(turns: number, macro: number): Promise<void> {
	for (let i = 0; i < turns; i++) await undefined;
	for (let i = 0; i < macro; i++) await new Promise((resolve) => setTimeout(resolve, 0));
}

const orders = [
	{ name: 'before the wait completes', terminateFirst: true, turns: 0, macro: 0 },
	...[0, 1, 2, 3, 5, 8, 13].map((turns) => ({ name: `${turns} microtask turns into its completion`, terminateFirst: false, turns, macro: 0 })),
	...[1, 2].map((macro) => ({ name: `${macro} macrotasks into its completion`, terminateFirst: false, turns: 0, macro })),
];

describe('a terminate racing the wait a run is in', () => {
	const cases = Object.keys(waits).flatMap((wait) => orders.map((order) => [wait, order] as const));
	let n = 0;
	it.for(cases.map(([wait, order]) => [`${wait}, terminated ${order.name}`, wait, order] as const))('%s: no step starts after the terminate', async ([, wait, order]) => {
		const instance = await waits[wait]!(`race-${n++}`);
		const terminate = () => {
			try {
				instance.engine().terminate();
			} catch (error) {
				// The run finished first: then there is no terminate to race.
				if (!(error instanceof InvalidStateError)) throw error;
			}
		};
		let completion: Promise<unknown>;
		if (order.terminateFirst) {
			terminate();
			completion = instance.complete();
		} else {
			completion = instance.complete();
			await after_(order.turns, order.macro);
			terminate();
		}
		// Refused after the terminate, with a typed error (INVALID_STATE, WEBHOOK_EXPIRED), or taken before it.
		await completion.catch((error) => expect(error).toHaveProperty('code'));
		await instance.idle();
		const events = instance.engine().history({ limit: 1000 }).events;
		const terminated = events.findIndex((e) => e.kind === 'workflow.terminated');
		const started = events.map((e, i) => [e, i] as const).filter(([e]) => e.kind === 'step.started');
		if (terminated >= 0) expect(started.filter(([, i]) => i > terminated)).toEqual([]);
		// Every run of the step after the wait has its record: none ran unseen.
		expect(ran.get(instance.id) ?? 0).toBe(started.filter(([e]) => 'step' in e && e.step === 'after').length);
		if (order.terminateFirst) expect(ran.get(instance.id) ?? 0).toBe(0);
		expect(['terminated', 'completed']).toContain(instance.engine().status().status);
	});
});
