import type { Context } from 'hono';
import { getCookie, setCookie, deleteCookie } from 'hono/cookie';
import { timingSafeEqual } from 'hono/utils/buffer';
import type { ApiEnv } from '../api/env';

/** How the dashboard is reached is the API's rule: a sign-in when API_TOKEN is set, open in development, else closed. */
export { authMode } from '../api/auth';

export const SESSION_COOKIE = 'shardflow_session';
/**
 * A session lasts an hour and is renewed while it is used (a page or an API
 * call of the dashboard in its second half gets a fresh one), but never past
 * `SESSION_MAX_SECONDS` after the sign-in: then the user signs in again.
 * Sessions are stateless, so signing out clears the browser's cookie but cannot
 * recall a copy of it: a copy stays valid for its hour, and by use at most
 * until the sign-in's 12 hours are up. Rotating API_TOKEN ends every session at
 * once (docs/rest-api.md "Security").
 */
export const SESSION_SECONDS = 60 * 60;
export const SESSION_MAX_SECONDS = 12 * 60 * 60;
const encoder = new TextEncoder();

/** A valid session: when it was signed in and when it ends (seconds since the epoch). */
export interface Session {
	signedInAt: number;
	expiry: number;
}

/**
 * A session is `<signedInAt>.<expiry>.<HMAC-SHA256(API_TOKEN, signedInAt:expiry)>`:
 * the cookie proves the browser was given the token without holding it, needs
 * no storage, and every session ends when the token is rotated.
 */
async function sign(token: string, signedInAt: number, expiry: number): Promise<string> {
	const key = await crypto.subtle.importKey('raw', encoder.encode(token), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
	const mac = new Uint8Array(await crypto.subtle.sign('HMAC', key, encoder.encode(`shardflow-dashboard-session:${signedInAt}:${expiry}`)));
	return btoa(String.fromCharCode(...mac)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** The request's valid session, or null when it has none. */
export async function readSession(c: Context<{ Bindings: ApiEnv }>): Promise<Session | null> {
	const token = c.env.API_TOKEN;
	const value = getCookie(c, SESSION_COOKIE);
	const match = value ? /^(\d{10})\.(\d{10})\.([\w-]{43})$/.exec(value) : null;
	if (!token || !match) return null;
	const [signedInAt, expiry] = [Number(match[1]), Number(match[2])];
	const now = Date.now() / 1000;
	if (expiry < now || expiry > now + SESSION_SECONDS || expiry > signedInAt + SESSION_MAX_SECONDS) return null;
	return (await timingSafeEqual(match[3]!, await sign(token, signedInAt, expiry))) ? { signedInAt, expiry } : null;
}

export async function hasSession(c: Context<{ Bindings: ApiEnv }>): Promise<boolean> {
	return (await readSession(c)) !== null;
}

/**
 * The `Set-Cookie` value of a renewed session when the request's one is in its
 * second half and its sign-in has time left; null when it needs none.
 */
export async function renewedSession(c: Context<{ Bindings: ApiEnv }>, session: Session, path: string): Promise<string | null> {
	const now = Math.floor(Date.now() / 1000);
	if (session.expiry - now >= SESSION_SECONDS / 2) return null;
	const expiry = Math.min(now + SESSION_SECONDS, session.signedInAt + SESSION_MAX_SECONDS);
	if (expiry <= session.expiry) return null;
	return cookie(path, session.signedInAt, expiry, await sign(c.env.API_TOKEN!, session.signedInAt, expiry), expiry - now);
}

/** Checks a submitted token and, when it is right, sets the session cookie (HttpOnly, Secure, SameSite=Strict, for the dashboard's path only). */
export async function logIn(c: Context<{ Bindings: ApiEnv }>, submitted: string, path: string): Promise<boolean> {
	const token = c.env.API_TOKEN;
	if (!token || !(await timingSafeEqual(token, submitted))) return false;
	const now = Math.floor(Date.now() / 1000);
	const expiry = now + SESSION_SECONDS;
	setCookie(c, SESSION_COOKIE, `${now}.${expiry}.${await sign(token, now, expiry)}`, cookieOptions(path, SESSION_SECONDS));
	return true;
}

/** `path` is where the dashboard is mounted (`/dashboard`, `/ops/dashboard`): the cookie goes nowhere else on the host. */
export function logOut(c: Context, path: string): void {
	deleteCookie(c, SESSION_COOKIE, { path, secure: true });
}

const cookieOptions = (path: string, maxAge: number) => ({ path, httpOnly: true, secure: true, sameSite: 'Strict' as const, maxAge });

function cookie(path: string, signedInAt: number, expiry: number, mac: string, maxAge: number): string {
	return `${SESSION_COOKIE}=${signedInAt}.${expiry}.${mac}; Max-Age=${maxAge}; Path=${path}; HttpOnly; Secure; SameSite=Strict`;
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
