import { describe, expect, it } from 'vitest';
import { decodeBase64UrlJson, encodeBase64UrlJson } from '../../src/engine/support/base64url-json';
import { decodeCursor, encodeCursor, importCursorKey, randomCursorSecret } from '../../src/engine/index/cursor';
import { parseDuration } from '../../src/engine/support/duration';
import { ErrorCode } from '../../src/engine/support/errors';
import { assertValidWorkflowId, uuidv7 } from '../../src/engine/support/ids';
import { resolveRetryPolicy, retryDelayMs } from '../../src/engine/definition/retry-policy';
import { fnv1a32, shardIndex } from '../../src/engine/index/shard';
import { shardName } from '../../src/engine/object-names';

describe('parseDuration', () => {
	it.for([
		[1500, 1500],
		['2s', 2000],
		['1 second', 1000],
		['500ms', 500],
		['24 hours', 86_400_000],
		['7d', 604_800_000],
		['7 days', 604_800_000],
		['1.5 minutes', 90_000],
	] as const)('reads %j as %i ms', ([input, ms]) => {
		expect(parseDuration(input)).toBe(ms);
	});

	it.for(['', 'soon', '5 fortnights', '-1s', -5, Number.NaN, '400 days'])('refuses %j with INVALID_DURATION', (input) => {
		expect(() => parseDuration(input as string)).toThrow(expect.objectContaining({ code: ErrorCode.InvalidDuration }));
	});

	it.for([
		[Number.POSITIVE_INFINITY, 'Infinity'],
		[Number.NaN, 'NaN'],
	] as const)('names %s as written in its error, not as null', ([input, shown]) => {
		expect(() => parseDuration(input)).toThrow(`invalid duration ${shown}:`);
	});
});

describe('retry policy', () => {
	it('computes constant, linear and exponential waits', () => {
		const waits = (backoff: 'constant' | 'linear' | 'exponential') =>
			[1, 2, 3, 4].map((n) => retryDelayMs(resolveRetryPolicy({ limit: 5, delay: '1s', backoff }), n));
		expect(waits('constant')).toEqual([1000, 1000, 1000, 1000]);
		expect(waits('linear')).toEqual([1000, 2000, 3000, 4000]);
		expect(waits('exponential')).toEqual([1000, 2000, 4000, 8000]);
	});

	it('refuses a negative limit', () => {
		expect(() => resolveRetryPolicy({ limit: -1, delay: 0 })).toThrow(/retries.limit/);
	});
});

describe('shard routing', () => {
	it.for([
		['', 0x811c9dc5],
		['a', 0xe40c292c],
		['foobar', 0xbf9cf968],
		['payment-123', 0xdd9f8a4c],
		['order-42', 0x572446f4],
	] as const)('hashes %j to the published FNV-1a value', ([input, hash]) => {
		expect(fnv1a32(input)).toBe(hash);
	});

	it('routes payment-123 to shard 0 of 4, 4 of 8 and 12 of 16', () => {
		expect([4, 8, 16].map((n) => shardIndex('payment-123', n))).toEqual([0, 4, 12]);
	});

	it('hashes the UTF-8 bytes, not UTF-16 units', () => {
		expect(fnv1a32('é')).not.toBe(fnv1a32('\u00e9'.normalize('NFD')));
		let expected = 0x811c9dc5;
		for (const byte of [0xc3, 0xa9]) expected = Math.imul(expected ^ byte, 0x01000193);
		expect(fnv1a32('é')).toBe(expected >>> 0);
	});

	it('spreads 100k ids over 8 shards within 5% of each other', () => {
		const counts = new Array(8).fill(0);
		for (let i = 0; i < 100_000; i++) counts[shardIndex(`payment-${i}`, 8)]++;
		expect(Math.max(...counts) / Math.min(...counts)).toBeLessThan(1.05);
	});

	it('names shards __index:<type>:<n>', () => {
		expect(shardName('payment', 3)).toBe('__index:payment:3');
	});
});

describe('cursor', () => {
	const filters = { status: ['running' as const] };
	const key = () => importCursorKey('test-secret');
	const encode = async (order: 'createdAt' | 'updatedAt' = 'createdAt') => encodeCursor(await key(), { at: 123, id: 'a' }, order, 'payment', filters);
	const decode = async (cursor: string, order: 'createdAt' | 'updatedAt' = 'createdAt', f: typeof filters | { status: ['completed'] } = filters) =>
		decodeCursor(await key(), cursor, order, 'payment', f);
	const invalid = expect.objectContaining({ code: ErrorCode.InvalidCursor });

	it('round-trips a position for the same query and order', async () => {
		expect(await decode(await encode())).toEqual({ at: 123, id: 'a' });
	});

	it.for(['nope!', 'eyJ9', btoa('[1,2,"a",3,4]'), 'x'.repeat(700), `${'a'.repeat(20)}.${'b'.repeat(43)}`])('refuses the forged or malformed cursor %j', async (cursor) => {
		await expect(decode(cursor)).rejects.toThrow(invalid);
	});

	it('refuses a cursor issued for other filters, another order, or truncated', async () => {
		const cursor = await encode();
		await expect(decode(cursor, 'createdAt', { status: ['completed'] })).rejects.toThrow(/other filters/);
		await expect(decode(cursor, 'updatedAt')).rejects.toThrow(/createdAt order/);
		await expect(decode(cursor.slice(0, -4))).rejects.toThrow(invalid);
	});

	it('refuses a cursor whose body was edited, keeping its signature', async () => {
		const [body, signature] = (await encode()).split('.') as [string, string];
		const edited = encodeBase64UrlJson((decodeBase64UrlJson(body) as unknown[]).map((p) => (p === 123 ? 122 : p)));
		await expect(decode(`${edited}.${signature}`)).rejects.toThrow(/not issued by this API/);
	});

	it('refuses a cursor signed with another key', async () => {
		const other = await encodeCursor(await importCursorKey('another-secret'), { at: 123, id: 'a' }, 'createdAt', 'payment', filters);
		await expect(decode(other)).rejects.toThrow(invalid);
	});

	it('generates 32 random bytes of key material per call', () => {
		const [a, b] = [randomCursorSecret(), randomCursorSecret()];
		expect(a).toMatch(/^[A-Za-z0-9_-]{43}$/);
		expect(a).not.toBe(b);
	});
});

describe('workflow ids', () => {
	it.for(['.', '..', '...'])('refuses the id %j made only of dots, which URLs cannot reach', (id) => {
		expect(() => assertValidWorkflowId(id)).toThrow(expect.objectContaining({ code: ErrorCode.InvalidId }));
	});

	it.for(['a.b', '.a', 'a..', 'v1.2.3'])('accepts the id %j with dots among other characters', (id) => {
		expect(() => assertValidWorkflowId(id)).not.toThrow();
	});
});

describe('uuidv7', () => {
	it('generates time-ordered version-7 ids', () => {
		const a = uuidv7(1000);
		const b = uuidv7(2000);
		expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
		expect(a < b).toBe(true);
	});
});
