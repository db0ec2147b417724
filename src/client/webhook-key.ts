import { importWebhookKey } from '../engine/webhooks/webhook';
import { engineKey } from './engine-key';

/**
 * The key that signs and checks webhook tokens (engine/webhooks/webhook.ts):
 * `WEBHOOK_SECRET` when set, else a key generated once for the namespace and
 * kept durably in its `__keys` object (apart from the cursor key, so one never
 * mints the other's tokens). Fetched once per isolate; a failed fetch is not cached.
 */
export const webhookKey = engineKey({
	secret: (env) => env.WEBHOOK_SECRET,
	generated: (keys) => keys.webhookSecret(),
	importKey: importWebhookKey,
});
