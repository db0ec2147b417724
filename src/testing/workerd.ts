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
import { assertValidWorkflowId } from '../engine/ids';
import { InstanceModifiers } from './instance-modifiers';
import { registerMocks, releaseMocks } from './workerd-mocks';
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
	const id = options.id ?? `test-${workflow.type}-${Date.now().toString(36)}-${(instances++).toString(36)}`;
	assertValidWorkflowId(id);
	const modifiers = new InstanceModifiers();
	registerMocks(id, modifiers.mocks);
	const driver = new WorkerdInstanceDriver(options.env, workflow.type, id, () => releaseMocks(id, modifiers.mocks));
	return new WorkflowTestKit(workflow, driver, modifiers);
}

export { WorkflowTestKit, type TestableWorkflow } from './workflow-test-kit';
export { testKitClock } from './workerd-clock';
export type { MockTimes } from './step-mocks';
export { StatusNotReachedError, TestKitError, TestKitErrorCode, UnusedMockError } from './test-kit-errors';
// Exploration and replay run the pure engine and the record alone: the same functions in both modes.
export { assertCrashSafe, CrashDivergenceError, exploreCrashes, type CrashExploration, type CrashPoint, type CrashRun } from './crash-exploration';
export { assertReplays, ReplayDivergenceError, replayHistory, type ReplayDivergence, type ReplayInput, type ReplayResult } from './history-replay';
