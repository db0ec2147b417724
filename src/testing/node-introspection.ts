import type { ShardflowEnv } from '../client/instance-client';
import type { Registry } from '../engine/definition/registry';
import { NodeWorkflowNamespace } from './node-namespace';
import { startTimeOf, VirtualClock } from './virtual-clock';
import { WorkflowIntrospector, type AttachIntrospector } from './workflow-introspector';
import type { TestableWorkflow } from './workflow-test-kit';

export interface NodeIntrospectOptions<E extends object = {}> {
	/**
	 * The env the Worker's code is given (and the workflows' `this.env`): its
	 * `WORKFLOW_RUNNER` becomes the kit's until the last introspector on it is
	 * disposed, as Cloudflare's introspector replaces the binding. A new one by
	 * default (`introspector.env`). Introspectors of several types share one env.
	 */
	env?: E;
	/** The author's registry, so the Worker's code can create every type it holds; by default the introspected classes. */
	registry?: Registry;
	/** Where the env's virtual clock starts (set by the first introspector on the env). */
	startAt?: Date | number;
}

/** An introspector on Node, with the env whose `WORKFLOW_RUNNER` routes creates to the kit. */
export class NodeWorkflowIntrospector<W extends TestableWorkflow, E extends object = {}> extends WorkflowIntrospector<W> {
	constructor(
		workflow: W,
		/** Give it to the Worker's code: instances it creates there are the kit's. */
		readonly env: E & ShardflowEnv,
		attach: AttachIntrospector,
	) {
		super(workflow, attach);
	}
}

/**
 * Introspects the instances of `workflow` that the Worker's own code creates
 * from now on, on plain Node: code given the introspector's env (the typed
 * helpers, `instances.*`, a workflow's `this.env`) creates its instances on
 * the pure engine, with the modifiers given to `modifyAll`; `get()` hands
 * them back as test-kit handles, on one virtual clock per env.
 *
 * @example
 * const orders = await introspectWorkflow(OrderWorkflow);
 * await orders.modifyAll((m) => m.disableSleeps().mockStepResult('price', 99));
 * await placeOrder(orders.env, 'book'); // calls OrderWorkflow.create(env, ...)
 * const [order] = await orders.get();
 * await order.waitForStatus('completed');
 * await orders.dispose();
 */
export async function introspectWorkflow<W extends TestableWorkflow, E extends object = {}>(
	workflow: W,
	options: NodeIntrospectOptions<E> = {},
): Promise<NodeWorkflowIntrospector<W, E>> {
	const env = (options.env ?? {}) as E & ShardflowEnv;
	const holder = env as unknown as Record<string, unknown>;
	let namespace = holder.WORKFLOW_RUNNER instanceof NodeWorkflowNamespace ? holder.WORKFLOW_RUNNER : undefined;
	if (!namespace) {
		const previous = { had: 'WORKFLOW_RUNNER' in holder, value: holder.WORKFLOW_RUNNER };
		namespace = new NodeWorkflowNamespace(env, new VirtualClock(startTimeOf(options.startAt)), options.registry, previous);
		holder.WORKFLOW_RUNNER = namespace;
	}
	const ns = namespace;
	ns.include(workflow);
	ns.users++;
	return new NodeWorkflowIntrospector(workflow, env, (adopt) => {
		const stop = ns.adoptCreated(workflow.type, adopt);
		return () => {
			stop();
			if (--ns.users > 0) return;
			if (ns.previous.had) holder.WORKFLOW_RUNNER = ns.previous.value;
			else delete holder.WORKFLOW_RUNNER;
		};
	});
}
