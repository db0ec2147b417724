import { CURSOR_KEY_OBJECT, importCursorKey } from '../engine/cursor';
import { namespace, type ShardflowEnv } from './instance-client';
import { unwrap, type KeysRpc } from './rpc';

// Per isolate: the key behind a secret, or behind a namespace's `__keys` object.
const fromSecret = new Map<string, Promise<CryptoKey>>();
const fromNamespace = new WeakMap<object, Promise<CryptoKey>>();

/**
 * The key that signs and checks listing cursors: `CURSOR_SECRET` when set,
 * else the key generated once for the namespace and kept durably in its
 * `__keys` object, so a caller Worker bound to the same namespace checks the
 * API's cursors without any configuration. Fetched once per isolate; a failed
 * fetch is not cached.
 */
export function cursorKey(env: ShardflowEnv): Promise<CryptoKey> {
	const secret = env.CURSOR_SECRET;
	if (secret) return once(fromSecret, secret, () => importCursorKey(secret));
	return once(fromNamespace, env.WORKFLOW_RUNNER, async () => {
		const keys = namespace(env).getByName(CURSOR_KEY_OBJECT) as KeysRpc;
		return importCursorKey(await unwrap(keys.cursorSecret()));
	});
}

function once<K>(cache: { get(k: K): Promise<CryptoKey> | undefined; set(k: K, v: Promise<CryptoKey>): unknown; delete(k: K): unknown }, key: K, load: () => Promise<CryptoKey>) {
	let pending = cache.get(key);
	if (!pending) {
		pending = load();
		cache.set(key, pending);
		pending.catch(() => cache.delete(key));
	}
	return pending;
}
