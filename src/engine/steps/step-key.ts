import type { StepKind } from '../support/step-kinds';

/**
 * The one place that builds step row keys. The kind is part of the key, so a
 * `do` and a `sleep` that share a name never collide.
 */
export function stepKey(kind: StepKind, name: string): string {
	return `${kind}:${name}`;
}
