import { importCursorKey } from '../engine/index/cursor';
import { engineKey } from './engine-key';

/**
 * The key that signs and checks listing cursors: `CURSOR_SECRET` when set,
 * else the key generated once for the namespace and kept durably in its
 * `__keys` object, so a caller Worker bound to the same namespace checks the
 * API's cursors without any configuration. Fetched once per isolate; a failed
 * fetch is not cached.
 */
export const cursorKey = engineKey({
	secret: (env) => env.CURSOR_SECRET,
	generated: (keys) => keys.cursorSecret(),
	importKey: importCursorKey,
});
