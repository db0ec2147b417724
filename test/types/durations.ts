/**
 * Durations are checked at compile time: a number of milliseconds, or a
 * number and a known unit. Checked by `tsc --noEmit` in `npm test`: every
 * `@ts-expect-error` below must be an error. Nothing here runs.
 */
import type { Duration } from '../../src/engine/support/duration';
import { defineRegistry } from '../../src/engine/definition/registry';
import type { Step, WorkflowDefaults } from '../../src/engine/definition/types';
import { Workflow } from '../../src/workflow';

export const accepted: Duration[] = [0, 1500, '2s', '500ms', '500 ms', '1 second', '1.5 hours', '7d', '7 days', '1 week', '1y'];

// @ts-expect-error: "sec0nds" is not a unit
export const misspelt: Duration = '3 sec0nds';
// @ts-expect-error: a unit needs a number
export const noNumber: Duration = 'seconds';
// @ts-expect-error: "fortnight" is not a unit
export const unknownUnit: Duration = '2 fortnights';

const events = { go: {} as { now: boolean } };

export class Sleeper extends Workflow<{}, void> {
	static override readonly type = 'sleeper';
	static override events = events;
	async run(step: Step<typeof events>) {
		await step.sleep('nap', '1 second');
		await step.sleep('short', 250);
		// @ts-expect-error: misspelt unit in a sleep
		await step.sleep('typo', '3 sec0nds');
		// @ts-expect-error: misspelt unit in a step timeout
		await step.do('call', async () => 1, { timeout: '30 secs!' });
		// @ts-expect-error: misspelt unit in a retry delay
		await step.do('retry', async () => 1, { retries: { limit: 2, delay: '1 sec0nd' } });
		await step.do('ok', async () => 1, { timeout: '30 seconds', retries: { limit: 2, delay: '1s', backoff: 'linear' } });
		await step.waitForEvent('go', { timeout: '1 day' });
		// @ts-expect-error: misspelt unit in a wait's timeout
		await step.waitForEvent('go', { timeout: '1 dya' });
	}
}

/** `satisfies WorkflowDefaults` types the class property, so its durations are checked. */
export class CheckedDefaults extends Workflow<{}, void> {
	static override readonly type = 'checked-defaults';
	static override defaults = { retries: { limit: 3, delay: '1s', backoff: 'exponential' } } satisfies WorkflowDefaults;
	async run() {}
}

export class MisspeltDefaults extends Workflow<{}, void> {
	static override readonly type = 'misspelt-defaults';
	// @ts-expect-error: with `satisfies`, a misspelt delay in static defaults does not compile
	static override defaults = { retries: { limit: 3, delay: '1 sec0nd' } } satisfies WorkflowDefaults;
	async run() {}
}

/**
 * Without `satisfies` a class property's strings widen to `string` (TypeScript
 * does not type it from the base class); such a class still compiles, and
 * `defineRegistry` checks its defaults when the Worker starts.
 */
export class UncheckedDefaults extends Workflow<{}, void> {
	static override readonly type = 'unchecked-defaults';
	static override defaults = { retries: { limit: 3, delay: '1s', backoff: 'exponential' as const } };
	async run() {}
}

export const registry = defineRegistry({
	sleeper: { workflow: Sleeper, retention: { completed: '30 days', errored: 'forever' } },
	'unchecked-defaults': { workflow: UncheckedDefaults },
	// @ts-expect-error: misspelt unit in a retention
	'checked-defaults': { workflow: CheckedDefaults, retention: { completed: '30 dayz' } },
});
