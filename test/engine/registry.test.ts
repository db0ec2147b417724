import { describe, expect, it } from 'vitest';
import { ErrorCode, RegistryError } from '../../src/engine/support/errors';
import { defineRegistry } from '../../src/engine/definition/registry';
import type { WorkflowDefaults } from '../../src/engine/definition/types';
import { Workflow } from '../../src/workflow';

class Greeter extends Workflow<{ name: string }, string> {
	static override readonly type = 'greeter';
	async run() {
		return 'hi';
	}
}

class TypoDefaults extends Workflow<{}, void> {
	static override readonly type = 'typo-defaults';
	// Without `satisfies WorkflowDefaults` this compiles: the string is widened.
	static override defaults = { retries: { limit: 2, delay: '3 sec0nds' } };
	async run() {}
}

class GoodDefaults extends Workflow<{}, void> {
	static override readonly type = 'good-defaults';
	static override defaults = { retries: { limit: 2, delay: '3 seconds', backoff: 'linear' } } satisfies WorkflowDefaults;
	async run() {}
}

/** A registry as JavaScript (or a cast) can write it: the compile-time check does not see it. */
const unchecked = (definitions: Record<string, unknown>) => defineRegistry(definitions as never);

describe('a registry that cannot run', () => {
	it('names the key, the class and its static type when a key differs from the static type', () => {
		const registry = unchecked({ greeting: { workflow: Greeter } });
		expect(registry.problem).toBeInstanceOf(RegistryError);
		expect(registry.problem?.code).toBe(ErrorCode.InvalidRegistry);
		expect(registry.problem?.message).toContain('registry key "greeting" holds class Greeter, whose static type is "greeter"');
		expect(registry.problem?.message).toContain('"greeter": { workflow: Greeter }');
	});

	it('does not throw where it is defined (module load) but on every use, so a dev server stays up to show it', () => {
		const registry = unchecked({ greeting: { workflow: Greeter } });
		for (const use of [() => registry.get('greeter'), () => registry.types(), () => registry.has('greeter')]) {
			expect(use).toThrow(/registry key "greeting" holds class Greeter, whose static type is "greeter"/);
		}
	});

	it('lists every broken entry at once', () => {
		const registry = unchecked({ greeting: { workflow: Greeter }, other: {}, 'typo-defaults': { workflow: TypoDefaults } });
		expect(registry.problem?.message).toMatch(/registry key "greeting".*; registry key "other" must hold \{ workflow: .*\}.*; workflow type "typo-defaults"/);
	});

	it('refuses static defaults with a misspelt duration, naming the type and the class, before any step runs', () => {
		const registry = defineRegistry({ 'typo-defaults': { workflow: TypoDefaults } });
		expect(registry.problem?.message).toMatch(/workflow type "typo-defaults" \(class TypoDefaults\) has invalid static defaults: invalid duration "3 sec0nds"/);
	});

	it('refuses static defaults with an unknown field, naming it (a typo would otherwise do nothing)', () => {
		class ExtraField extends Workflow<{}, void> {
			static override readonly type = 'extra-field';
			static override defaults = { retries: { limit: 2, delay: '1s', jitter: true } } as never;
			async run() {}
		}
		class ExtraDefault extends Workflow<{}, void> {
			static override readonly type = 'extra-default';
			static override defaults = { retries: { limit: 2, delay: '1s' }, retry: { limit: 9, delay: '1s' } } as never;
			async run() {}
		}
		const registry = defineRegistry({ 'extra-field': { workflow: ExtraField }, 'extra-default': { workflow: ExtraDefault } });
		expect(registry.problem?.message).toContain('workflow type "extra-field" (class ExtraField) has invalid static defaults: unknown field "retries.jitter"');
		expect(registry.problem?.message).toContain('workflow type "extra-default" (class ExtraDefault) has invalid static defaults: unknown field "retry"');
	});

	it('accepts a registry whose keys match and whose defaults are valid', () => {
		const registry = defineRegistry({ greeter: { workflow: Greeter }, 'good-defaults': { workflow: GoodDefaults } });
		expect(registry.problem).toBeNull();
		expect(registry.types()).toEqual(['greeter', 'good-defaults']);
	});
});

describe('stuckAfter: when a running or waiting instance counts as stuck in GET /metrics', () => {
	it('defaults to an hour running and a week waiting, takes durations per status, and turns a check off with never', () => {
		const registry = defineRegistry({ greeter: { workflow: Greeter } });
		expect(registry.get('greeter').stuckAfter).toEqual({ running: 3_600_000, waiting: 7 * 86_400_000 });
		const tuned = defineRegistry({ greeter: { workflow: Greeter, stuckAfter: { running: '15 minutes', waiting: 'never' } } });
		expect(tuned.get('greeter').stuckAfter).toEqual({ running: 900_000, waiting: null });
	});

	it('refuses a threshold that is no duration, naming the type and the status', () => {
		const registry = unchecked({ greeter: { workflow: Greeter, stuckAfter: { waiting: 'soon' } } });
		expect(registry.problem?.code).toBe(ErrorCode.InvalidRegistry);
		expect(registry.problem?.message).toContain("greeter.stuckAfter.waiting: ");
		expect(registry.problem?.message).toContain("(or 'never')");
	});
});
