import type { SigningKey } from '../support/signing-key';
import { decodeBase64Url, decodeBase64UrlJson, encodeBase64Url, encodeBase64UrlJson } from '../support/base64url-json';
import { WebhookInvalidError } from '../support/errors';
import { fromStoredJson } from '../support/json';

/**
 * The one owner of the webhook token format and of what a webhook step stores.
 *
 * A token is `<body>.<signature>`: the body is base64url JSON of
 * `[version, instanceId, generation, step, nonce]`, the signature HMAC-SHA256 of
 * the body (with a domain prefix) under the webhook key, base64url. The key is
 * `WEBHOOK_SECRET` or one generated once per namespace in `__keys`; without it
 * nobody can mint or alter a token. The nonce (random, stored in the step row)
 * binds the token to this incarnation of the step: a token of a deleted and
 * re-created instance, or of an earlier generation, matches no row.
 */
const VERSION = 1;
const MAX_TOKEN_LENGTH = 1200;
const SHAPE = /^([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{43})$/;
const DOMAIN = 'shardflow-webhook:';
const utf8 = new TextEncoder();

/** The path under which the Worker accepts webhook calls (outside the API's auth). */
export const WEBHOOK_PATH = '/webhooks/';

/** What a webhook token names. */
export interface WebhookTarget {
	id: string;
	generation: number;
	step: string;
	nonce: string;
}

/** The result column of a `webhook` step row: its URL and, once called, the body. */
export interface WebhookRecord {
	url: string;
	expiresAt: number | null;
	nonce: string;
	/** The JSON body of the one accepted POST (present once the row is `completed`). */
	body?: unknown;
	receivedAt?: number;
}

export function newWebhookNonce(): string {
	return encodeBase64Url(crypto.getRandomValues(new Uint8Array(16)));
}

/** The HMAC-SHA256 key for a secret (`WEBHOOK_SECRET`, or material generated in `__keys`). */
export function importWebhookKey(secret: string): Promise<SigningKey> {
	return crypto.subtle.importKey('raw', utf8.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']);
}

export async function encodeWebhookToken(key: SigningKey, target: WebhookTarget): Promise<string> {
	const body = encodeBase64UrlJson([VERSION, target.id, target.generation, target.step, target.nonce]);
	const signature = new Uint8Array(await crypto.subtle.sign('HMAC', key as CryptoKey, utf8.encode(DOMAIN + body)));
	return `${body}.${encodeBase64Url(signature)}`;
}

/** The target of a token this engine signed; WEBHOOK_INVALID (403) for anything else. Trusts nothing before the signature passes. */
export async function decodeWebhookToken(key: SigningKey, token: string): Promise<WebhookTarget> {
	const invalid = () => new WebhookInvalidError('this webhook URL was not issued by this engine (or was altered); use the URL exactly as step.webhook gave it');
	const shape = typeof token === 'string' && token.length <= MAX_TOKEN_LENGTH ? SHAPE.exec(token) : null;
	if (!shape) throw invalid();
	const [, body, signature] = shape as unknown as [string, string, string];
	const signatureBytes = decodeBase64Url(signature);
	// Only the canonical spelling of the signature: the unused low bits of its last character would
	// otherwise let an altered token (another last character) pass as the same signature.
	if (encodeBase64Url(signatureBytes) !== signature) throw invalid();
	if (!(await crypto.subtle.verify('HMAC', key as CryptoKey, signatureBytes, utf8.encode(DOMAIN + body)))) throw invalid();
	let parts: unknown;
	try {
		parts = decodeBase64UrlJson(body);
	} catch {
		throw invalid();
	}
	if (!Array.isArray(parts) || parts.length !== 5) throw invalid();
	const [version, id, generation, step, nonce] = parts;
	if (version !== VERSION || typeof id !== 'string' || !Number.isSafeInteger(generation) || typeof step !== 'string' || typeof nonce !== 'string') throw invalid();
	return { id, generation: generation as number, step, nonce };
}

/** The URL of a token: under `PUBLIC_URL` when configured, else a path the author prefixes with the Worker's origin. */
export function webhookUrl(token: string, publicUrl: string | undefined): string {
	const base = publicUrl ? publicUrl.replace(/\/+$/, '') : '';
	return `${base}${WEBHOOK_PATH}${token}`;
}

/** The token of a webhook URL (absolute or a path); WEBHOOK_INVALID when it is not one. */
export function webhookToken(url: string): string {
	const at = typeof url === 'string' ? url.lastIndexOf(WEBHOOK_PATH) : -1;
	if (at < 0) throw new WebhookInvalidError(`${JSON.stringify(url)} is not a webhook URL (it has no ${WEBHOOK_PATH})`);
	return url.slice(at + WEBHOOK_PATH.length);
}

export function storedWebhookRecord(record: WebhookRecord): string {
	return JSON.stringify(record);
}

export function readWebhookRecord(result: string | null): WebhookRecord {
	return fromStoredJson(result) as WebhookRecord;
}
