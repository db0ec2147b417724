/**
 * shardflow/testing: the test kit for workflow authors, on plain Node (vitest)
 * over the pure engine, an in-memory store and a virtual clock. The same API
 * runs against the real `WorkflowRunner` in workerd through
 * `shardflow/testing/workerd`. Nothing here is imported by the Worker, so it
 * stays out of the production bundle.
 */
import type { Registry } from '../engine/definition/registry';
import { NodeInstanceDriver } from './node-driver';
import { InstanceModifiers } from './instance-modifiers';
import { kitId, registryFor } from './test-registry';
import { startTimeOf, VirtualClock } from './virtual-clock';
import { WorkflowTestKit, type TestableWorkflow } from './workflow-test-kit';

export interface NodeTestOptions {
	/** The instance id (`ctx.id` in `run()`); `test-<type>` by default. */
	id?: string;
	/** What `this.env` holds in `run()`. */
	env?: unknown;
	/** The author's registry, if `run()` should see the deployed one; by default one holding just this class. */
	registry?: Registry;
	/** Where the virtual clock starts (epoch ms or a Date); a fixed instant by default, so runs repeat exactly. */
	startAt?: Date | number;
}

/**
 * A test instance of `workflow` on the pure engine: set modifiers, `start` it,
 * send events, move the clock and inspect it. Each call gives a fresh,
 * independent instance with its own clock.
 *
 * @example
 * const payment = testWorkflow(PaymentWorkflow);
 * await payment.start({ amount: 42, currency: 'EUR' });
 * await payment.clock.advance('7 days');
 * expect(await payment.output()).toEqual({ status: 'expired' });
 */
export function testWorkflow<W extends TestableWorkflow>(workflow: W, options: NodeTestOptions = {}): WorkflowTestKit<W> {
	const registry = registryFor(workflow, options.registry);
	const modifiers = new InstanceModifiers();
	const driver = new NodeInstanceDriver({
		registry,
		type: workflow.type,
		id: options.id ?? kitId(`test-${workflow.type}`, workflow.type, registry),
		env: options.env ?? {},
		clock: new VirtualClock(startTimeOf(options.startAt)),
		wrapStepFunction: modifiers.mocks.wrapper,
	});
	return new WorkflowTestKit(workflow, driver, modifiers);
}

export { WorkflowTestKit, type TestableWorkflow } from './workflow-test-kit';
export { introspectWorkflow, NodeWorkflowIntrospector, type NodeIntrospectOptions } from './node-introspection';
export { WorkflowIntrospector } from './workflow-introspector';
export type { WorkflowModifiers } from './instance-modifiers';
export type { MockTimes } from './step-mocks';
export { StatusNotReachedError, TestKitError, TestKitErrorCode, UnusedMockError } from './test-kit-errors';
export {
	assertCrashSafe,
	CrashDivergenceError,
	exploreCrashes,
	type CrashExploration,
	type CrashPoint,
	type CrashRun,
	type ExplorationEvent,
	type ExploreCrashesOptions,
} from './crash-exploration';
export type { RunOutcome } from './exploration-run';
export {
	assertReplays,
	ReplayDivergenceError,
	replayHistory,
	type ReplayDivergence,
	type ReplayInput,
	type ReplayOptions,
	type ReplayResult,
	type StepRef,
} from './history-replay';
