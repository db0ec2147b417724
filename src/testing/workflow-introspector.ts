import type { InstanceDriver } from './instance-driver';
import { InstanceModifiers, type WorkflowModifiers } from './instance-modifiers';
import { WorkflowTestKit, type TestableWorkflow } from './workflow-test-kit';

/**
 * How a kit mode hands an introspector the instances of its type as they are
 * created: `adopt` builds the instance's driver over the modifiers it gets
 * (their mocks are what the instance's engine must run through); the mode
 * calls it before the instance's first pass. Returns what stops the handing.
 */
export type AttachIntrospector = (adopt: (driverFor: (modifiers: InstanceModifiers) => InstanceDriver) => void) => () => void;

/**
 * The instances of one workflow type that the Worker's own code creates
 * while it is attached, each with the modifiers given to `modifyAll` so far,
 * as test-kit handles (`WorkflowTestKit`: waits, events, clock, output). The
 * same class in both kit modes; only how instances reach it differs
 * (`shardflow/testing`: the kit's env; `shardflow/testing/workerd`: the
 * runner's creation notice).
 *
 * @example
 * const orders = await introspectWorkflow(OrderWorkflow, { env });
 * await orders.modifyAll((m) => m.disableSleeps().mockStepResult('price', 99));
 * await placeOrder(env, 'book'); // the Worker's code: OrderWorkflow.create(env, ...)
 * const [order] = await orders.get();
 * await order.waitForStatus('completed');
 * await orders.dispose();
 */
export class WorkflowIntrospector<W extends TestableWorkflow> {
	private readonly template = new InstanceModifiers();
	private instances: WorkflowTestKit<W>[] = [];
	private detach: (() => void) | undefined;

	constructor(
		readonly workflow: W,
		attach: AttachIntrospector,
	) {
		this.detach = attach((driverFor) => {
			// A copy: modifiers given later apply to later instances only, as in Cloudflare's introspector.
			const modifiers = this.template.copy();
			this.instances.push(new WorkflowTestKit(workflow, driverFor(modifiers), modifiers, { created: true }));
		});
	}

	/**
	 * Adds modifiers for every instance created from now on. `fn` runs at once, so a
	 * modifier the kit refuses (a result that is not JSON, `times: 0`) throws here.
	 */
	async modifyAll(fn: (modifiers: WorkflowModifiers) => unknown): Promise<void> {
		await fn(this.template);
	}

	/**
	 * The instances created since this introspector began (and before `dispose`), oldest
	 * first, each settled as the kit's actions leave an instance: run until it has nothing
	 * left to do, so its clock starts where its run stands.
	 */
	async get(): Promise<WorkflowTestKit<W>[]> {
		const instances = [...this.instances];
		for (const instance of instances) await instance.settle();
		return instances;
	}

	/** Stops adopting new instances and releases the handles (their mocks); instances already created keep running. */
	async dispose(): Promise<void> {
		this.detach?.();
		this.detach = undefined;
		const instances = this.instances;
		this.instances = [];
		await Promise.all(instances.map((instance) => instance.dispose()));
	}
}
