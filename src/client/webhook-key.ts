import { CURSOR_KEY_OBJECT } from '../engine/cursor';
import { importWebhookKey } from '../engine/webhook';
import { namespace, type ShardflowEnv } from './instance-client';
import { unwrap, type KeysRpc } from './rpc';

// Per isolate: the key behind a secret, or behind a namespace's `__keys` object.
const fromSecret = new Map<string, Promise<CryptoKey>>();
const fromNamespace = new WeakMap<object, Promise<CryptoKey>>();

/**
 * The key that signs and checks webhook tokens (engine/webhook.ts):
 * `WEBHOOK_SECRET` when set, else a key generated once for the namespace and
 * kept durably in its `__keys` object (apart from the cursor key, so one never
 * mints the other's tokens). Fetched once per isolate; a failed fetch is not cached.
 */
export function webhookKey(env: ShardflowEnv): Promise<CryptoKey> {
	const secret = env.WEBHOOK_SECRET;
	if (secret) return once(fromSecret, secret, () => importWebhookKey(secret));
	return once(fromNamespace, env.WORKFLOW_RUNNER, async () => {
		const keys = namespace(env).getByName(CURSOR_KEY_OBJECT) as KeysRpc;
		return importWebhookKey(await unwrap(keys.webhookSecret()));
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
