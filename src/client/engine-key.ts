import type { SigningKey } from '../engine/support/signing-key';
import type { ShardflowEnv } from './instance-client';
import { unwrap, type KeysRpc, type RpcResult } from './rpc';
import { roleStub } from './stubs';

/** One signing key of the engine: from a configured secret, else generated once in the namespace's `__keys` object. */
export interface EngineKeySource {
	/** The configured secret (`CURSOR_SECRET`, `WEBHOOK_SECRET`), if any. */
	secret(env: ShardflowEnv): string | undefined;
	/** Asks the `__keys` object for this key's generated secret. */
	generated(keys: KeysRpc): Promise<RpcResult<string>> | RpcResult<string>;
	importKey(secret: string): Promise<SigningKey>;
}

/**
 * A key getter that fetches each key once per isolate (per secret, or per
 * namespace binding) and never caches a failed fetch.
 */
export function engineKey(source: EngineKeySource): (env: ShardflowEnv) => Promise<SigningKey> {
	const fromSecret = new Map<string, Promise<SigningKey>>();
	const fromNamespace = new WeakMap<object, Promise<SigningKey>>();
	return (env) => {
		const secret = source.secret(env);
		if (secret) return once(fromSecret, secret, () => source.importKey(secret));
		return once(fromNamespace, env.WORKFLOW_RUNNER, async () => {
			const keys = roleStub(env, 'keys');
			return source.importKey(await unwrap(source.generated(keys)));
		});
	};
}

function once<K>(cache: { get(k: K): Promise<SigningKey> | undefined; set(k: K, v: Promise<SigningKey>): unknown; delete(k: K): unknown }, key: K, load: () => Promise<SigningKey>) {
	let pending = cache.get(key);
	if (!pending) {
		pending = load();
		cache.set(key, pending);
		pending.catch(() => cache.delete(key));
	}
	return pending;
}
