/**
 * JSON as unpadded base64url over its UTF-8 bytes: the one encoding behind
 * every opaque token we hand out (listing cursors, rebalance cursors).
 */
export function encodeBase64UrlJson(value: unknown): string {
	const bytes = new TextEncoder().encode(JSON.stringify(value));
	return btoa(String.fromCharCode(...bytes))
		.replaceAll('+', '-')
		.replaceAll('/', '_')
		.replace(/=+$/, '');
}

/** The inverse of `encodeBase64UrlJson`; throws on anything it did not produce. */
export function decodeBase64UrlJson(token: string): unknown {
	if (!/^[A-Za-z0-9_-]*$/.test(token)) throw new SyntaxError('not base64url');
	const binary = atob(token.replaceAll('-', '+').replaceAll('_', '/'));
	return JSON.parse(new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(Uint8Array.from(binary, (c) => c.charCodeAt(0))));
}
