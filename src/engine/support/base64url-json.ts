/**
 * Unpadded base64url: the one encoding behind every opaque token we hand out
 * (listing cursors and their signatures, rebalance cursors).
 */
export function encodeBase64Url(bytes: Uint8Array): string {
	return btoa(String.fromCharCode(...bytes))
		.replaceAll('+', '-')
		.replaceAll('/', '_')
		.replace(/=+$/, '');
}

/** The inverse of `encodeBase64Url`; throws on anything it did not produce. */
export function decodeBase64Url(token: string): Uint8Array {
	if (!/^[A-Za-z0-9_-]*$/.test(token)) throw new SyntaxError('not base64url');
	const binary = atob(token.replaceAll('-', '+').replaceAll('_', '/'));
	return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

/** JSON as unpadded base64url over its UTF-8 bytes. */
export function encodeBase64UrlJson(value: unknown): string {
	return encodeBase64Url(new TextEncoder().encode(JSON.stringify(value)));
}

/** The inverse of `encodeBase64UrlJson`; throws on anything it did not produce. */
export function decodeBase64UrlJson(token: string): unknown {
	return JSON.parse(new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(decodeBase64Url(token)));
}
