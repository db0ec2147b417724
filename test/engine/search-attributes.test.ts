import { describe, expect, it } from 'vitest';
import { parseDatetimeText, parseNumberText, parseTimeJson } from '../../src/engine/index/attribute-text';
import { applyAttributeUpdate, checkAttributeDeclaration, checkAttributeFilters, keepReservedAttributeNames } from '../../src/engine/index/search-attributes';
import { ErrorCode } from '../../src/engine/support/errors';

describe('attribute values as text', () => {
	it.for([
		['20', 20],
		['-1.5', -1.5],
		['2e3', 2000],
		['1E-1', 0.1],
		['0', 0],
	] as const)('reads the JSON number %s', ([text, value]) => {
		expect(parseNumberText(text)).toBe(value);
	});

	it.for(['0x14', '20.', '.2e2', '+1', ' 20', '020', '1e999', 'Infinity', '', '1_000'])('refuses %j, which is not a JSON number', (text) => {
		expect(parseNumberText(text)).toBeUndefined();
	});

	it.for([
		['1714557600000', Date.UTC(2024, 4, 1, 10)],
		['100000000000', 100_000_000_000],
		['-100000000000', -100_000_000_000],
		['2024-05-01', Date.UTC(2024, 4, 1)],
		['2024-02-29', Date.UTC(2024, 1, 29)],
		['2024-05-01T10:00Z', Date.UTC(2024, 4, 1, 10)],
		['2024-05-01T12:00:00+02:00', Date.UTC(2024, 4, 1, 10)],
		['2024-05-01T10:00:00.5Z', Date.UTC(2024, 4, 1, 10, 0, 0, 500)],
	] as const)('reads the datetime %s', ([text, ms]) => {
		expect(parseDatetimeText(text)).toBe(ms);
	});

	it.for([
		['2024', 'a bare 4-digit number: a year, or 2 s into 1970?'],
		['0', 'a number shorter than 12 digits'],
		['20240301', 'an ISO 8601 basic date (1 March 2024, not 5.6 h into 1970)'],
		['1714557600', 'seconds since the epoch (10 digits), not ms'],
		['99999999999', 'ms before 1973-03-03 (11 digits)'],
		['8640000000000001', "ms beyond JavaScript's Date range"],
		['2023-02-29', 'a day the month does not have'],
		['2024-13-01', 'a month that does not exist'],
		['2024-05-01T10:00', 'a time without a zone'],
		['2024-05-01T24:00Z', 'hour 24'],
		['2024-05-01 10:00Z', 'a space instead of T'],
		['May 1, 2024', 'a date in words'],
		['1714557600000.5', 'a fraction of a millisecond'],
	] as const)('refuses the datetime %s (%s)', ([text]) => {
		expect(parseDatetimeText(text)).toBeUndefined();
	});
});

describe('time conditions in JSON', () => {
	it('holds a JSON number to the rule of its digits: 2024 and 20240301 are refused, ms of 12 digits read', () => {
		expect(parseTimeJson(2024)).toBeUndefined();
		expect(parseTimeJson(20240301)).toBeUndefined();
		expect(parseTimeJson(1.5e12 + 0.5)).toBeUndefined();
		expect(parseTimeJson(1714557600000)).toBe(1714557600000);
		expect(parseTimeJson('2024-05-01')).toBe(Date.UTC(2024, 4, 1));
		expect(parseTimeJson(true)).toBeUndefined();
	});
});

describe('datetime attributes within Date range', () => {
	const declared = { dueAt: 'datetime' } as const;

	it.for([-8_640_000_000_000_001, 8_640_000_000_000_001, Number.MAX_SAFE_INTEGER])('refuses %d ms at create and setAttributes with INVALID_SEARCH_ATTRIBUTES (no Date holds it)', (ms) => {
		expect(() => applyAttributeUpdate('t', declared, {}, { dueAt: ms })).toThrow(expect.objectContaining({ code: ErrorCode.InvalidSearchAttributes, message: expect.stringContaining("Date can hold") }));
	});

	it('keeps the two ends of the range, the furthest times a Date holds', () => {
		expect(applyAttributeUpdate('t', declared, {}, { dueAt: -8.64e15 })).toEqual({ dueAt: -8.64e15 });
		expect(applyAttributeUpdate('t', declared, {}, { dueAt: new Date(8.64e15) })).toEqual({ dueAt: 8.64e15 });
	});
});

describe('reserved attribute names', () => {
	const declared = { customerId: 'keyword' } as const;

	it.for(['constructor', 'prototype', '__proto__'])('refuses %s at declaration', (name) => {
		expect(() => checkAttributeDeclaration('t', JSON.parse(`{"${name}":"keyword"}`))).toThrow(/is reserved/);
	});

	it.for(['constructor', 'prototype', '__proto__'])('refuses %s at create and setAttributes with INVALID_SEARCH_ATTRIBUTES', (name) => {
		expect(() => applyAttributeUpdate('t', declared, {}, JSON.parse(`{"${name}":"x"}`))).toThrow(expect.objectContaining({ code: ErrorCode.InvalidSearchAttributes, message: expect.stringContaining('is reserved') }));
	});

	it.for(['constructor', 'prototype', '__proto__'])('refuses %s in a listing with INVALID_QUERY', (name) => {
		expect(() => checkAttributeFilters('t', declared, JSON.parse(`{"${name}":"x"}`))).toThrow(expect.objectContaining({ code: ErrorCode.InvalidQuery, message: expect.stringContaining('is reserved') }));
	});

	it('hands on the attributes as parsed when they hold a reserved name a schema dropped, the validated ones otherwise', () => {
		const raw = JSON.parse('{"__proto__":"x","customerId":"42"}');
		expect(keepReservedAttributeNames({ customerId: '42' }, raw)).toBe(raw);
		const plain = { customerId: '42' };
		expect(keepReservedAttributeNames(plain, { customerId: '42' })).toBe(plain);
		expect(keepReservedAttributeNames(undefined, undefined)).toBeUndefined();
	});
});

describe('attribute values a query could never find', () => {
	const declared = { customer: 'keyword', dueAt: 'datetime' } as const;

	it('refuses a keyword with a lone UTF-16 surrogate (it has no UTF-8 form) and keeps a well-formed pair', () => {
		for (const value of ['\ud800', 'a\udc00b', 'x\ud83d']) {
			expect(() => applyAttributeUpdate('t', declared, {}, { customer: value })).toThrow(expect.objectContaining({ code: ErrorCode.InvalidSearchAttributes, message: expect.stringContaining('lone UTF-16 surrogate') }));
		}
		expect(applyAttributeUpdate('t', declared, {}, { customer: 'caf\u00e9 \ud83d\ude00' })).toEqual({ customer: 'caf\u00e9 \ud83d\ude00' });
	});

	it('limits a keyword to 256 UTF-8 bytes, not 256 characters: 128 two-byte letters fit, 129 do not', () => {
		const refused = expect.objectContaining({ code: ErrorCode.InvalidSearchAttributes, message: expect.stringContaining('at most 256 UTF-8 bytes') });
		expect(applyAttributeUpdate('t', declared, {}, { customer: 'a'.repeat(256) })).toEqual({ customer: 'a'.repeat(256) });
		expect(() => applyAttributeUpdate('t', declared, {}, { customer: 'a'.repeat(257) })).toThrow(refused);
		// 'é' is 1 UTF-16 unit and 2 UTF-8 bytes; '😀' is 2 units and 4 bytes.
		expect(applyAttributeUpdate('t', declared, {}, { customer: '\u00e9'.repeat(128) })).toEqual({ customer: '\u00e9'.repeat(128) });
		expect(() => applyAttributeUpdate('t', declared, {}, { customer: '\u00e9'.repeat(129) })).toThrow(refused);
		expect(() => applyAttributeUpdate('t', declared, {}, { customer: '\ud83d\ude00'.repeat(65) })).toThrow(refused);
		expect(() => applyAttributeUpdate('t', declared, {}, { customer: `${'a'.repeat(255)}\u00e9` })).toThrow(refused);
	});

	it('reads a datetime given as text (a JSON body) by the rule queries read times with, and refuses text that rule refuses', () => {
		expect(applyAttributeUpdate('t', declared, {}, { dueAt: '2024-05-01T10:00Z' })).toEqual({ dueAt: Date.UTC(2024, 4, 1, 10) });
		expect(applyAttributeUpdate('t', declared, {}, { dueAt: '2024-05-01' })).toEqual({ dueAt: Date.UTC(2024, 4, 1) });
		expect(applyAttributeUpdate('t', declared, {}, { dueAt: String(Date.UTC(2024, 4, 1)) })).toEqual({ dueAt: Date.UTC(2024, 4, 1) });
		for (const text of ['2024', 'tomorrow', '2024-13-01']) {
			expect(() => applyAttributeUpdate('t', declared, {}, { dueAt: text })).toThrow(expect.objectContaining({ code: ErrorCode.InvalidSearchAttributes }));
		}
	});
});
