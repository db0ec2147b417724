import type { Context } from 'hono';
import { getCookie, setCookie, deleteCookie } from 'hono/cookie';
import { timingSafeEqual } from 'hono/utils/buffer';
import type { ApiEnv } from '../api/app';

/** How the dashboard is reached is the API's rule: a sign-in when API_TOKEN is set, open in development, else closed. */
export { authMode } from '../api/auth';

export const SESSION_COOKIE = 'shardflow_session';
/**
 * A session lasts an hour and is renewed while it is used (a page or call in its
 * second half issues a fresh one). Sessions are stateless, so signing out clears
 * the browser's cookie but cannot recall a copy of it: a copy stays valid until
 * its hour is up. Rotating API_TOKEN ends every session at once (README "Security").
 */
export const SESSION_SECONDS = 60 * 60;
const encoder = new TextEncoder();

/**
 * A session is `<expiry>.<HMAC-SHA256(API_TOKEN, expiry)>`: the cookie proves
 * the browser was given the token without holding it, needs no storage, and
 * every session ends when the token is rotated.
 */
async function sign(token: string, expiry: number): Promise<string> {
	const key = await crypto.subtle.importKey('raw', encoder.encode(token), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
	const mac = new Uint8Array(await crypto.subtle.sign('HMAC', key, encoder.encode(`shardflow-dashboard-session:${expiry}`)));
	return btoa(String.fromCharCode(...mac)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** When the request's valid session ends (seconds since the epoch), or null when it has none. */
export async function sessionExpiry(c: Context<{ Bindings: ApiEnv }>): Promise<number | null> {
	const token = c.env.API_TOKEN;
	const value = getCookie(c, SESSION_COOKIE);
	const match = value ? /^(\d{10,13})\.([\w-]{43})$/.exec(value) : null;
	if (!token || !match) return null;
	const expiry = Number(match[1]);
	if (expiry * 1000 < Date.now() || expiry * 1000 > Date.now() + SESSION_SECONDS * 1000) return null;
	return (await timingSafeEqual(match[2]!, await sign(token, expiry))) ? expiry : null;
}

export async function hasSession(c: Context<{ Bindings: ApiEnv }>): Promise<boolean> {
	return (await sessionExpiry(c)) !== null;
}

/** Issues a fresh session when the request's one is in its second half, so a dashboard in use stays signed in. */
export async function renewSession(c: Context<{ Bindings: ApiEnv }>, expiry: number): Promise<void> {
	if (expiry * 1000 - Date.now() < (SESSION_SECONDS * 1000) / 2) await issue(c, c.env.API_TOKEN!);
}

/** Checks a submitted token and, when it is right, sets the session cookie (HttpOnly, Secure, SameSite=Strict). */
export async function logIn(c: Context<{ Bindings: ApiEnv }>, submitted: string): Promise<boolean> {
	const token = c.env.API_TOKEN;
	if (!token || !(await timingSafeEqual(token, submitted))) return false;
	await issue(c, token);
	return true;
}

async function issue(c: Context, token: string): Promise<void> {
	const expiry = Math.floor(Date.now() / 1000) + SESSION_SECONDS;
	setCookie(c, SESSION_COOKIE, `${expiry}.${await sign(token, expiry)}`, {
		path: '/dashboard',
		httpOnly: true,
		secure: true,
		sameSite: 'Strict',
		maxAge: SESSION_SECONDS,
	});
}

export function logOut(c: Context): void {
	deleteCookie(c, SESSION_COOKIE, { path: '/dashboard', secure: true });
}

/**
 * Cross-site request protection for everything that changes state or opens a
 * socket: the browser's `Origin` (or, without one, `Sec-Fetch-Site`) must say
 * the request comes from the dashboard's own origin. Together with the
 * SameSite=Strict cookie, a page on another site can neither post a control
 * nor open a live socket with the user's session.
 */
export function sameOrigin(c: Context): boolean {
	const origin = c.req.header('origin');
	if (origin) return origin === new URL(c.req.url).origin;
	return c.req.header('sec-fetch-site') === 'same-origin';
}
