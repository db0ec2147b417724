import type { Context } from 'hono';
import { ApiError } from './http-errors';

/** The Workers Rate Limiting binding's surface (wrangler.jsonc `ratelimits`). */
export interface RateLimitBinding {
	limit(options: { key: string }): Promise<{ success: boolean }>;
}

/** Wrong credentials one client address may send per window before it is refused outright. */
export const FAILED_CREDENTIALS_PER_MINUTE = 10;
const WINDOW_MS = 60_000;
/** Addresses this isolate remembers at once; the oldest window goes first past this. */
const MAX_TRACKED = 10_000;

/** Failed credentials per address in this isolate's current window, and when each address's block ends. */
const windows = new Map<string, { start: number; failures: number }>();
const blockedUntil = new Map<string, number>();

/**
 * The client's address as Cloudflare's edge states it (`cf-connecting-ip`, set by
 * Cloudflare on every request from the internet). Without one the request came
 * from inside the account (a service binding, the dashboard's own calls) or from
 * `wrangler dev`, which passes the client's header through as it is: such
 * requests are not limited, so no shared bucket can lock everyone out.
 */
export function clientAddress(c: Context): string | undefined {
	return c.req.header('cf-connecting-ip') || undefined;
}

/**
 * Refuses an address that sent too many wrong credentials lately, before its
 * credential is even compared: 429 `TOO_MANY_FAILED_CREDENTIALS` with
 * `Retry-After`. A right token from a blocked address waits out the block too,
 * so guessing stops paying while the block lasts.
 */
export function refuseIfBlocked(c: Context, now = Date.now()): void {
	const address = clientAddress(c);
	const until = address === undefined ? undefined : blockedUntil.get(address);
	if (until === undefined) return;
	if (until <= now) {
		blockedUntil.delete(address!);
		return;
	}
	throw tooMany(c, until - now);
}

/**
 * Counts one wrong credential from the request's address and throws 429 once
 * the address is over `FAILED_CREDENTIALS_PER_MINUTE`. With the
 * `AUTH_FAILURES` rate-limiting binding the count is shared by every isolate of
 * a Cloudflare location; without it, each isolate counts its own.
 */
export async function countFailedCredential(c: Context, now = Date.now()): Promise<void> {
	const address = clientAddress(c);
	if (address === undefined) return;
	let over: boolean;
	const binding = (c.env as { AUTH_FAILURES?: RateLimitBinding } | undefined)?.AUTH_FAILURES;
	if (binding && typeof binding.limit === 'function') {
		over = !(await binding.limit({ key: `auth-failures:${address}` })).success;
	} else {
		let window = windows.get(address);
		if (!window || now - window.start >= WINDOW_MS) {
			if (windows.size >= MAX_TRACKED) windows.delete(windows.keys().next().value!);
			window = { start: now, failures: 0 };
			windows.set(address, window);
		}
		window.failures++;
		over = window.failures > FAILED_CREDENTIALS_PER_MINUTE;
	}
	if (!over) return;
	if (blockedUntil.size >= MAX_TRACKED) blockedUntil.delete(blockedUntil.keys().next().value!);
	blockedUntil.set(address, now + WINDOW_MS);
	throw tooMany(c, WINDOW_MS);
}

function tooMany(c: Context, ms: number): ApiError {
	c.header('Retry-After', String(Math.ceil(ms / 1000)));
	return new ApiError(429, 'TOO_MANY_FAILED_CREDENTIALS', `too many wrong credentials from this address: try again in ${Math.ceil(ms / 1000)} s`);
}
