/**
 * shardflow/testing/runner: what a test Worker's `WorkflowRunner` needs so the
 * workerd test kit (`shardflow/testing/workerd`) can mock its step functions.
 * It belongs in the test Worker only; the production class has no such seam
 * reachable over RPC (the hook is symbol-keyed, and only this subclass fills it).
 */
import type { StepFunctionWrapper } from '../engine/step-function-wrapper';
import { stepWrapperForTests, type WorkflowRunnerBase } from '../runtime/workflow-runner';
import { mockWrapperFor } from './workerd-mocks';

/**
 * The production runner of a registry, plus the test kit's step mocks.
 *
 * @example
 * // the test Worker's main module (vitest `cloudflareTest({ main })`)
 * export class WorkflowRunner extends withTestKit(createWorkflowRunner(registry)) {}
 */
export function withTestKit<T extends new (...args: any[]) => WorkflowRunnerBase>(Runner: T): T {
	// Abstract only for the type checker: `Runner`'s instance type is the abstract base, its value a concrete class.
	abstract class TestKitRunner extends Runner {
		protected override [stepWrapperForTests](): StepFunctionWrapper | undefined {
			return mockWrapperFor(this.ctx.id.name ?? this.ctx.id.toString());
		}
	}
	return TestKitRunner as unknown as T;
}
