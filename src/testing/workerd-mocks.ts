import type { StepFunctionWrapper } from '../engine/steps/step-function-wrapper';
import type { StepMocks } from './step-mocks';

/**
 * The mocks of every workerd test instance, by instance id. The Workers
 * vitest integration runs the tests and the Durable Objects they drive in one
 * isolate, so the test registers an instance's mocks here and that instance's
 * runner (built with `testKitRunnerOptions`) finds them, without any RPC.
 */
const mocksByInstance = new Map<string, StepMocks>();

export function registerMocks(id: string, mocks: StepMocks): void {
	mocksByInstance.set(id, mocks);
}

export function releaseMocks(id: string, mocks: StepMocks): void {
	if (mocksByInstance.get(id) === mocks) mocksByInstance.delete(id);
}

/** The wrapper an instance's engine gets: looked up per attempt, so mocks set after the engine was built still apply. */
export function mockWrapperFor(id: string): StepFunctionWrapper {
	return (step, fn) => {
		const mocks = mocksByInstance.get(id);
		return mocks ? mocks.wrapper(step, fn) : fn;
	};
}

/**
 * The introspectors (`introspectWorkflow`) by workflow type: each adopts the
 * instances of its type that a runner creates, unless the test drives that id
 * itself (`testWorkflow` registered its mocks first). The newest introspector
 * of a type takes over, so one a failed test never disposed does not hold on.
 */
const adoptersByType = new Map<string, (id: string) => void>();

export function adoptCreated(type: string, adopt: (id: string) => void): () => void {
	adoptersByType.set(type, adopt);
	return () => {
		if (adoptersByType.get(type) === adopt) adoptersByType.delete(type);
	};
}

/** The runner's creation notice (`RunnerOptions.instanceCreated`), before the instance's first pass. */
export function instanceCreated({ id, type }: { id: string; type: string }): void {
	if (!mocksByInstance.has(id)) adoptersByType.get(type)?.(id);
}
