import { logFormOf, printLog } from '../engine/support/engine-log';

/** Settings this isolate has reported, by name and value. */
const reported = new Set<string>();

/**
 * Logs a malformed setting (`config.invalid`, error level) once per isolate for each value: settings are
 * read on every create and many reads, and one wrong var must not become an error line per request. The
 * line is one JSON object under development like every engine line (logFormOf), so the documented
 * `npm run dev` filter sees it. `message` says what was expected and which fallback is used.
 */
export function reportInvalidSetting(env: unknown, setting: string, value: unknown, message: string): void {
	const key = `${setting}=${JSON.stringify(value)}`;
	if (reported.has(key)) return;
	reported.add(key);
	printLog({ severity: 'error', event: 'config.invalid', setting, error: { name: 'ConfigurationError', message } }, logFormOf(env));
}
