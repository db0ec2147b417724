import { NonRetryableError, ShardflowError } from '../support/errors';
import type { PassStore } from '../storage/store';
import type { PassHooks } from './pass-hooks';
import { AbortSignal_, isSignal } from './signals';

/** The hooks through which a pass writes (or marks the instance running): guarded like the store. */
const WRITE_HOOKS = ['willWrite', 'record', 'setWakeup', 'writeStepWithRecord', 'insertStep', 'setAttributes'] as const;

/**
 * A pass's storage, guarded so that a failure of the storage itself (an SQL error, a write the
 * runtime refused, a table an older or newer build does not have) ends the pass, never the run.
 * Unguarded, such an error surfaced in `run()` as the failure of the step that was writing: the
 * workflow errored for good, ran its rollbacks, or took the `catch` of a step that had not failed.
 * Guarded, the first one is kept (`failure`) and the pass's abort signal is thrown instead, which
 * `run()` cannot swallow (every later step throws it again, and no later step's function runs);
 * the replay loop then fails the pass, and the instance is retried from its alarm with the
 * passes' backoff, as after a crash at that write. The engine's own typed errors (a limit, a
 * validation) and the signals pass through unchanged.
 */
export class PassStorage {
	/** The first storage failure of the pass. */
	failure: unknown;
	private readonly signal = new AbortSignal_('storage');
	/** Told the signal at the first failure: the step context makes it the pass's signal. */
	private listener: ((signal: AbortSignal_) => void) | undefined;

	listen(listener: (signal: AbortSignal_) => void): void {
		this.listener = listener;
	}

	/** `store` with every call but `transaction` guarded (a transaction's failures are its calls'). */
	store<S extends PassStore>(store: S): S {
		const guarded = new Map<PropertyKey, unknown>();
		return new Proxy(store, {
			get: (target, property, receiver) => {
				const value = Reflect.get(target, property, receiver);
				if (typeof value !== 'function' || property === 'transaction') return value;
				let call = guarded.get(property);
				if (!call) guarded.set(property, (call = this.guard((...args: unknown[]) => (value as (...a: unknown[]) => unknown).apply(target, args))));
				return call;
			},
		});
	}

	/** `hooks` with the writing ones guarded. */
	hooks<H extends PassHooks>(hooks: H): H {
		const guarded = { ...hooks } as Record<string, unknown>;
		for (const name of WRITE_HOOKS) {
			const hook = hooks[name] as ((...args: unknown[]) => unknown) | undefined;
			if (hook) guarded[name] = this.guard((...args: unknown[]) => hook.apply(hooks, args));
		}
		return guarded as H;
	}

	private guard<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R {
		return (...args) => {
			if (this.failure !== undefined) throw this.signal;
			try {
				return fn(...args);
			} catch (error) {
				if (isSignal(error) || error instanceof ShardflowError || error instanceof NonRetryableError) throw error;
				this.failure = error;
				this.listener?.(this.signal);
				throw this.signal;
			}
		};
	}
}
