/**
 * An HMAC key from `crypto.subtle.importKey` (cursors, webhook tokens), named
 * structurally so the package's declarations need no DOM or Workers types: a
 * plain-Node test project type-checks with `@types/node` alone. Every
 * runtime's `CryptoKey` fits it; the engine hands it back to `crypto.subtle`.
 */
export interface SigningKey {
	readonly type: string;
	readonly extractable: boolean;
}
