/**
 * shardflow/testing/runner: what a test Worker's runner needs so the workerd
 * test kit (`shardflow/testing/workerd`) can move its clock and mock its step
 * functions. Construction options, not RPC methods: the production class is
 * built without them and exposes no test hook.
 *
 * @example
 * // the test Worker's main module (vitest `cloudflareTest({ main })`), with the author's own registry
 * export class WorkflowRunner extends createWorkflowRunner(registry, testKitRunnerOptions) {}
 * export default createApp(registry, { clock: testKitClock.now });
 */
import type { RunnerOptions } from '../runtime/workflow-runner';
import { testKitClock } from './workerd-clock';
import { instanceCreated, mockWrapperFor } from './workerd-mocks';

export const testKitRunnerOptions: RunnerOptions = {
	clock: testKitClock.now,
	wrapStepFunctions: mockWrapperFor,
	instanceCreated,
};

export { testKitClock } from './workerd-clock';
