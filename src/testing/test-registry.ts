import { defineRegistry, type Registry } from '../engine/definition/registry';
import { TestKitError, TestKitErrorCode } from './test-kit-errors';
import { inPlace } from '../engine/support/group-id';
import { knownPlacement } from '../engine/groups/known-placements';
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

/**
 * A kit's default instance id, in the group its type is pinned to (docs/residency.md): the
 * registry's when given, else what this isolate learnt from the registry it defined. A type
 * choosing its group from the payload gets the id as given: pass `id` in the group the payload
 * picks, or the start is refused (GROUP_MISMATCH) as a create would be.
 */
export function kitId(base: string, type: string, registry?: Registry): string {
	const placement = registry ? { groups: registry.groups, choice: registry.has(type) ? registry.get(type).group : undefined } : knownPlacement(type);
	if (!placement || typeof placement.choice !== 'string') return base;
	const group = placement.groups.get(placement.choice);
	return group && group.deployed ? inPlace(group.place, base) : base;
}
