import type { KeysAccess } from '../../operations/role-calls';
import { randomCursorSecret } from '../../engine/index/cursor';
import { storedSecret } from '../engine-keys-store';
import type { ObjectStorage } from '../object-storage';

/** The engine's key store (`__keys`): secrets generated once per namespace, then stable. */
export class KeysRole implements KeysAccess {
	readonly kind = 'keys';

	constructor(private readonly storage: ObjectStorage) {}

	/** The key material that signs listing cursors when no CURSOR_SECRET is set. */
	async cursorSecret(): Promise<string> {
		await this.storage.ensureSchema();
		return storedSecret(this.storage.db, 'cursor', randomCursorSecret);
	}

	/** The key material that signs webhook tokens (`step.webhook`) when no WEBHOOK_SECRET is set. */
	async webhookSecret(): Promise<string> {
		await this.storage.ensureSchema();
		return storedSecret(this.storage.db, 'webhook', randomCursorSecret);
	}
}
