/**
 * shardflow/testing/workerd: the test kit's API against the real
 * `WorkflowRunner` and Drizzle storage, inside workerd through
 * `@cloudflare/vitest-plugin`. The test Worker (vitest `cloudflareTest({ main })`)
 * builds its runner from the author's own registry with `testKitRunnerOptions`
 * from `shardflow/testing/runner`.
 *
 * @example
 * import { env } from 'cloudflare:workers';
 * const payment = testWorkflow(PaymentWorkflow, { env });
 * await payment.start({ amount: 42, currency: 'EUR' });
 * await payment.clock.advance('7 days');
 * expect(await payment.output()).toEqual({ status: 'expired' });
 */
import type { ShardflowEnv } from '../client/instance-client';
import { assertValidWorkflowId } from '../engine/support/ids';
import { InstanceModifiers } from './instance-modifiers';
import { kitId } from './test-registry';
import { adoptCreated, registerMocks, releaseMocks } from './workerd-mocks';
import { WorkflowIntrospector } from './workflow-introspector';
import { WorkerdInstanceDriver } from './workerd-driver';
import { WorkflowTestKit, type TestableWorkflow } from './workflow-test-kit';

export interface WorkerdTestOptions {
	/** The test's bindings; `WORKFLOW_RUNNER` must be the test Worker's runner (built with `testKitRunnerOptions`). */
	env: ShardflowEnv;
	/** The instance id; a new unique one by default (storage outlives a test within a file). */
	id?: string;
}

let instances = 0;

/**
 * A test instance of `workflow` in the real runner. Mocks are registered for
 * its id until `dispose()`. The clock is the isolate's: moving it moves every
 * instance's time (`testKitClock.reset()` between tests).
 */
export function testWorkflow<W extends TestableWorkflow>(workflow: W, options: WorkerdTestOptions): WorkflowTestKit<W> {
	const id = options.id ?? kitId(`test-${workflow.type}-${Date.now().toString(36)}-${(instances++).toString(36)}`, workflow.type);
	assertValidWorkflowId(id);
	const modifiers = new InstanceModifiers();
	registerMocks(id, modifiers.mocks);
	const driver = new WorkerdInstanceDriver(options.env, workflow.type, id, () => releaseMocks(id, modifiers.mocks));
	return new WorkflowTestKit(workflow, driver, modifiers);
}

export interface WorkerdIntrospectOptions {
	/** The test's bindings, which the handles reach the instances through (as `testWorkflow`'s). */
	env: ShardflowEnv;
}

/**
 * Introspects the instances of `workflow` that the Worker's own code creates
 * from now on (its routes, a parent's step, a schedule: any create the test
 * Worker's runner stores), as Cloudflare's `introspectWorkflow` does: declare
 * modifiers with `modifyAll`, trigger the code, then `get()` the instances as
 * test-kit handles. Instances the test drives itself (`testWorkflow`) are left
 * out. The runner must be built with `testKitRunnerOptions`.
 *
 * @example
 * const orders = await introspectWorkflow(OrderWorkflow, { env });
 * await orders.modifyAll((m) => m.disableSleeps().mockStepResult('price', 99));
 * await SELF.fetch('https://shop.test/orders', { method: 'POST', body: '{"sku":"book"}' });
 * const [order] = await orders.get();
 * await order.waitForStatus('completed');
 * await orders.dispose();
 */
export async function introspectWorkflow<W extends TestableWorkflow>(workflow: W, options: WorkerdIntrospectOptions): Promise<WorkflowIntrospector<W>> {
	return new WorkflowIntrospector(workflow, (adopt) =>
		adoptCreated(workflow.type, (id) =>
			adopt((modifiers) => {
				registerMocks(id, modifiers.mocks);
				return new WorkerdInstanceDriver(options.env, workflow.type, id, () => releaseMocks(id, modifiers.mocks));
			}),
		),
	);
}

export { WorkflowTestKit, type TestableWorkflow } from './workflow-test-kit';
export { WorkflowIntrospector } from './workflow-introspector';
export type { WorkflowModifiers } from './instance-modifiers';
export { testKitClock } from './workerd-clock';
export type { MockTimes } from './step-mocks';
export { StatusNotReachedError, TestKitError, TestKitErrorCode, UnusedMockError } from './test-kit-errors';
// Exploration and replay run the pure engine and the record alone: the same functions in both modes.
export { assertCrashSafe, CrashDivergenceError, exploreCrashes, type CrashExploration, type CrashPoint, type CrashRun } from './crash-exploration';
export { assertReplays, ReplayDivergenceError, replayHistory, type ReplayDivergence, type ReplayInput, type ReplayResult } from './history-replay';
