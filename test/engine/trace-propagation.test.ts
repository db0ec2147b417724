import { describe, expect, it } from 'vitest';
import type { Step } from '../../src/engine/definition/types';
import { SPAN } from '../../src/engine/support/tracer';
import { tracedCall } from '../../src/runtime/traced-call';
import { workersTracer } from '../../src/runtime/workers-tracer';
import { Workflow } from '../../src/workflow';
import { World } from './child-world';
import { ancestry, FakeTracing, type FakeSpan } from './fake-tracing';
import { registryOf } from './start-instance';

// One trace per request: the caller's span is carried into the object by the runtime (Workers
// tracing propagates the trace over Durable Object RPC, changelog 2026-05-07; FakeTracing carries
// the active span through the async context as workerd does), and shardflow's own spans must keep
// to it: a call's span holds the pass it starts, a pass its attempts, and an invoked child's
// passes sit under the parent's pass wherever the child runs.

class Sum extends Workflow<{}, number> {
	static override readonly type = 'traced-sum';
	async run(step: Step) {
		const a = await step.do('a', () => 2);
		return step.do('b', async () => a * 21);
	}
}
class OwnObject extends Workflow<{}, number> {
	static override readonly type = 'traced-own';
	static override inline = false;
	async run(step: Step) {
		return step.do('c', async () => 7);
	}
}
class Parent extends Workflow<{ child: 'inline' | 'own' }, number> {
	static override readonly type = 'traced-parent';
	async run(step: Step, { child }: { child: 'inline' | 'own' }) {
		const n = await step.invoke('child', child === 'inline' ? Sum : OwnObject, { payload: {} });
		return step.do('double', () => n * 2);
	}
}

const registry = registryOf(Sum, OwnObject, Parent);

/** A create as the API Worker asks it: inside the request's span, through the call span the object records. */
async function createTraced(child: 'inline' | 'own') {
	const tracing = new FakeTracing();
	const tracer = workersTracer(tracing)!;
	const world = new World(registry, true);
	world.tracer = tracer;
	await tracing.startActiveSpan('POST /workflows', async (request) => {
		await tracedCall('create', 'p', () => world.engine('p').create('p', 'traced-parent', { child }), tracer);
		request.end();
	});
	await world.idle();
	expect(world.engine('p').status()).toMatchObject({ status: 'completed', output: child === 'inline' ? 84 : 14 });
	const of = (name: string, id: string) => tracing.spans.filter((s) => s.name === name && s.attributes[SPAN.instanceId] === id);
	/** The step attempts of a pass, by step name (an attempt's span names its step, its pass the instance). */
	const stepsOf = (pass: FakeSpan) => tracing.spans.filter((s) => s.name === 'shardflow.step' && s.parent === pass).map((s) => s.attributes[SPAN.step]);
	return { tracing, of, stepsOf };
}

const names = (spans: FakeSpan[]) => spans.map((s) => s.name);

describe('one trace per request', () => {
	it("nests the object's call span, its passes and their attempts under the API request's span", async () => {
		const { of, stepsOf } = await createTraced('own');
		const [call] = of('shardflow.create', 'p');
		expect(names(ancestry(call!))).toEqual(['POST /workflows', 'invocation']);
		const passes = of('shardflow.pass', 'p');
		expect(passes[0]!.parent).toBe(call);
		for (const pass of passes) expect(names(ancestry(pass))).toContain('POST /workflows');
		expect(passes.flatMap(stepsOf)).toEqual(['double']);
	});

	it("records the passes and attempts of a child that runs inside its parent (a short step.invoke), under the parent's pass", async () => {
		const { of, stepsOf } = await createTraced('inline');
		const [parentPass] = of('shardflow.pass', 'p');
		const childPasses = of('shardflow.pass', 'p::child');
		expect(childPasses.map((s) => s.attributes[SPAN.type])).toEqual(['traced-sum']);
		expect(ancestry(childPasses[0]!)).toContain(parentPass);
		expect(stepsOf(childPasses[0]!)).toEqual(['a', 'b']);
	});

	it("records a child that runs in its own object under the parent's pass, its create called from the parent's invoke", async () => {
		const { of, stepsOf } = await createTraced('own');
		const [parentPass] = of('shardflow.pass', 'p');
		const [childPass] = of('shardflow.pass', 'p::child');
		expect(ancestry(childPass!)).toContain(parentPass);
		expect(stepsOf(childPass!)).toEqual(['c']);
	});
});
