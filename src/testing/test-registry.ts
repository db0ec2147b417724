import { defineRegistry, type Registry } from '../engine/definition/registry';
import { TestKitError, TestKitErrorCode } from './test-kit-errors';
import type { TestableWorkflow } from './workflow-test-kit';

/**
 * The registry a Node-mode test runs `workflow` in: the author's own registry
 * when given (so its other types and shard settings are the deployed ones),
 * checked to hold this very class; otherwise one holding just the class.
 */
export function registryFor(workflow: TestableWorkflow, registry: Registry | undefined): Registry {
	if (!registry) return defineRegistry({ [workflow.type]: { workflow } } as never);
	if (!registry.has(workflow.type) || registry.get(workflow.type).workflow !== workflow) {
		throw new TestKitError(
			TestKitErrorCode.WrongWorkflow,
			`the registry given does not hold this workflow class under type "${workflow.type}"; registered types: ${registry.types().join(', ')}`,
		);
	}
	return registry;
}
