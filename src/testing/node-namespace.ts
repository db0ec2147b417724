import type { WorkflowRunnerNamespace } from '../client/instance-client';
import { wrap } from '../client/rpc';
import { childPortOver } from '../client/child-port';
import { defineRegistry, type Registry } from '../engine/definition/registry';
import type { AnyOperation, InstanceAccess } from '../operations/operation';
import { operations } from '../operations/table';
import type { InstanceModifiers } from './instance-modifiers';
import type { InstanceDriver } from './instance-driver';
import { NodeInstanceDriver } from './node-driver';
import type { StepMocks } from './step-mocks';
import { registryFor } from './test-registry';
import { TestKitError, TestKitErrorCode } from './test-kit-errors';
import type { VirtualClock } from './virtual-clock';
import type { TestableWorkflow } from './workflow-test-kit';

type Adopt = (driverFor: (modifiers: InstanceModifiers) => InstanceDriver) => void;

/**
 * A stand-in for the `WORKFLOW_RUNNER` namespace on plain Node: each instance
 * id is a `NodeInstanceDriver` over the pure engine, on one virtual clock, and
 * its stub answers the instance role's RPC methods from the operation table,
 * as a runner does. So the Worker's own code (`PaymentWorkflow.create(env, ...)`,
 * `instances.status(env, ...)`, a workflow's `this.env`) runs unchanged against
 * it, and the introspectors (`introspectWorkflow`) adopt the instances it creates.
 * Only instance objects exist here (a parent's children among them): the index, schedules and
 * limiters are workerd's.
 */
export class NodeWorkflowNamespace implements WorkflowRunnerNamespace {
	private readonly drivers = new Map<string, NodeInstanceDriver>();
	private readonly mocks = new Map<string, StepMocks>();
	private readonly adopters = new Map<string, Adopt>();
	private readonly classes = new Map<string, TestableWorkflow>();
	private registry: Registry;
	/** Introspectors using this namespace; the last to leave gives the env its own binding back. */
	users = 0;

	constructor(
		private readonly env: object,
		private readonly clock: VirtualClock,
		private readonly authorRegistry: Registry | undefined,
		readonly previous: { had: boolean; value: unknown },
	) {
		this.registry = authorRegistry ?? defineRegistry({} as never);
	}

	idFromName(name: string): string {
		return name;
	}

	get(id: string): unknown {
		return this.getByName(id);
	}

	getByName(id: string): unknown {
		if (id.startsWith('__')) {
			throw new TestKitError(TestKitErrorCode.Unsupported, `the Node kit runs workflow instances only; "${id}" (the index, schedules, limiters) needs the workerd kit`);
		}
		const stub: Record<string, (input: unknown) => Promise<unknown>> = {};
		for (const op of Object.values(operations) as AnyOperation[]) stub[op.rpc] = (input) => wrap(() => op.run(this.access(id), input));
		return stub;
	}

	/** Makes `workflow` creatable here: checked against the author's registry when one was given, else added to the namespace's own. */
	include(workflow: TestableWorkflow): void {
		if (this.authorRegistry) {
			registryFor(workflow, this.authorRegistry);
			return;
		}
		this.classes.set(workflow.type, workflow);
		this.registry = defineRegistry(Object.fromEntries([...this.classes].map(([type, w]) => [type, { workflow: w }])) as never);
	}

	/** The newest adopter of a type takes over (see workerd-mocks.ts for why). */
	adoptCreated(type: string, adopt: Adopt): () => void {
		this.adopters.set(type, adopt);
		return () => {
			if (this.adopters.get(type) === adopt) this.adopters.delete(type);
		};
	}

	/** An unknown id gets a driver over empty storage (NOT_FOUND to all but `create`), kept once a create reaches it. */
	private access(id: string): InstanceAccess {
		const driver = this.drivers.get(id) ?? this.newDriver(id);
		return { ...driver.instance, create: (request) => this.create(driver, request) };
	}

	private async create(driver: NodeInstanceDriver, request: { id: string; type: string; payload: unknown; parent?: unknown }) {
		this.drivers.set(driver.id, driver);
		const result = await driver.instance.create(request);
		// The first pass starts on a later macrotask (VirtualHost.defer): the modifiers are in place before it.
		if (result.created) {
			this.adopters.get(result.type)?.((modifiers) => {
				this.mocks.set(driver.id, modifiers.mocks);
				return driver;
			});
		}
		return result;
	}

	private newDriver(id: string): NodeInstanceDriver {
		return new NodeInstanceDriver({
			registry: this.registry,
			// Only the kit's own `start` reads it; these instances are created through the operation table.
			type: '',
			id,
			env: this.env,
			clock: this.clock,
			wrapStepFunction: (step, fn) => this.mocks.get(id)?.wrapper(step, fn) ?? fn,
			// A parent's step.invoke / step.start creates its child here too, as a runner's would in its namespace.
			children: childPortOver({ WORKFLOW_RUNNER: this }),
		});
	}
}
