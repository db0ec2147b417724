import { ErrorCode, ValidationError } from '../support/errors';
import { parseDatetimeText, parseNumberText, DATETIME_TEXT } from './attribute-text';

/**
 * Search attributes: a few typed values per instance, declared on its workflow
 * class, carried in its index entry and queried from SQL indexes in the shards
 * (docs/search-attributes.md). This module owns their kinds, their limits and
 * the checks of declared names and values; the shard owns how they are stored
 * (runtime/index-shard-store.ts).
 *
 * @example
 * class PaymentWorkflow extends Workflow<Payment> {
 *   static readonly type = 'payment';
 *   static readonly attributes = { customerId: 'keyword', amount: 'number', vip: 'boolean', dueAt: 'datetime' } as const;
 * }
 */
export const ATTRIBUTE_KINDS = ['keyword', 'number', 'boolean', 'datetime'] as const;
export type AttributeKind = (typeof ATTRIBUTE_KINDS)[number];

/** `static attributes` of a workflow class: attribute name -> kind. */
export type AttributeDeclaration = Readonly<Record<string, AttributeKind>>;

/** The limits of search attributes (docs/search-attributes.md; checked at declaration, create and set). */
export const ATTRIBUTE_LIMITS = {
	/** Attributes a type may declare. */
	perType: 16,
	/** Characters of a name: a letter, then letters, digits and `_`. */
	nameLength: 64,
	/** UTF-8 bytes of a keyword value. */
	keywordBytes: 256,
} as const;

/**
 * The furthest a datetime may be from the epoch, either side: JavaScript's `Date` range
 * (ECMA-262 §21.4.1.1, 100,000,000 days). A value beyond it has no date: `new Date(ms)` is
 * invalid and `toISOString()` throws, in the dashboard and in every caller that reads it back.
 */
export const MAX_DATETIME_MS = 8.64e15;

const NAME_PATTERN = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;

/**
 * Names no attribute may have, at declaration, create, `setAttributes` and listing alike: they
 * are the names of plain objects' own machinery, and attributes travel as plain objects (JSON
 * bodies, `{ ...attributes }`), where `__proto__` is dropped or turns into a prototype and
 * `constructor` reads as inherited. (`__proto__` fails the name pattern too; it is listed so the
 * refusal says why.)
 */
export const RESERVED_ATTRIBUTE_NAMES: readonly string[] = ['__proto__', 'constructor', 'prototype'];

/**
 * A JSON body's attributes as the API hands them on: the validated ones, unless the body as
 * parsed (`raw`) holds a reserved name. Schemas (zod) drop an own `__proto__` key without a word,
 * so a create with `{"__proto__": ...}` would otherwise succeed with the attribute silently
 * gone; handed on as parsed, it meets the same refusal as `constructor` in `applyAttributeUpdate`.
 */
export function keepReservedAttributeNames<T>(validated: T, raw: unknown): T {
	if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return validated;
	return RESERVED_ATTRIBUTE_NAMES.some((name) => Object.hasOwn(raw, name)) ? (raw as T) : validated;
}

function reservedName(name: string): string | undefined {
	return RESERVED_ATTRIBUTE_NAMES.includes(name) ? `${JSON.stringify(name)} is reserved (${RESERVED_ATTRIBUTE_NAMES.join(', ')} name no search attribute)` : undefined;
}

/** The value of one attribute as stored and listed: a datetime is ms since the epoch. */
export type StoredAttributeValue = string | number | boolean;
/** The attributes of an instance as stored and listed (only those set). */
export type StoredAttributes = Record<string, StoredAttributeValue>;

/** What a value of each kind is written as: a datetime as a `Date` or ms since the epoch. */
export type AttributeInput<K extends AttributeKind> = K extends 'keyword'
	? string
	: K extends 'number'
		? number
		: K extends 'boolean'
			? boolean
			: K extends 'datetime'
				? Date | number
				: never;

/** What a value of each kind reads as (a datetime: ms since the epoch). */
export type AttributeOutput<K extends AttributeKind> = K extends 'datetime' ? number : AttributeInput<K>;

/** The `static attributes` of a class, or `{}` when it declares none (then no attribute compiles). */
export type AttributesOf<W> = W extends { attributes: infer D extends AttributeDeclaration } ? D : {};

/**
 * What `create` and `step.setAttributes` accept: some declared attributes, each with a value of
 * its kind, or `null` to clear it. A name the class does not declare does not compile.
 */
export type AttributeUpdate<D extends AttributeDeclaration> = [keyof D] extends [never] ? NoAttributes : { [K in keyof D]?: AttributeInput<D[K]> | null };

/** What a class without `static attributes` accepts: no attribute at all (`{}` would accept anything). */
export type NoAttributes = Record<string, never>;

/** The attributes of an entry of a type, as listed. */
export type AttributeValues<D extends AttributeDeclaration> = { [K in keyof D]?: AttributeOutput<D[K]> };

/** A condition on one attribute in a listing query: a value (equality), a list (any of), or bounds. */
export type AttributeCondition<K extends AttributeKind> = K extends 'keyword' | 'boolean'
	? AttributeInput<K> | readonly AttributeInput<K>[]
	: AttributeInput<K> | readonly AttributeInput<K>[] | AttributeRange<AttributeInput<K>>;

/** Bounds on a number or datetime attribute: any of them, inclusive (`gte`, `lte`) or exclusive (`gt`, `lt`). */
export interface AttributeRange<V> {
	gt?: V;
	gte?: V;
	lt?: V;
	lte?: V;
}

/** The attribute filters of a listing of a type: declared names only, values of their kinds. */
export type AttributeFilters<D extends AttributeDeclaration> = [keyof D] extends [never] ? NoAttributes : { [K in keyof D]?: AttributeCondition<D[K]> };

/** A condition after checking: what the shard turns into SQL. */
export type CheckedCondition =
	| { op: 'eq'; value: StoredAttributeValue }
	| { op: 'in'; values: StoredAttributeValue[] }
	| { op: 'range'; gt?: number; gte?: number; lt?: number; lte?: number };

/** Values an `in` list may hold: each becomes one index-ordered query in the shard. */
export const MAX_IN_VALUES = 20;
/** Attribute conditions one listing may combine. */
export const MAX_ATTRIBUTE_FILTERS = 8;
/**
 * Values of all the `in` lists of one listing together: a list on an attribute that does not
 * drive the shard's walk is bound in one statement, and a statement takes at most 100 bound
 * parameters (src/runtime/sql-limits.ts); 40 leaves room for statuses, bounds and the keyset.
 */
export const MAX_LIST_VALUES_PER_QUERY = 40;

/** Checks a class's `static attributes` (when the registry is built): names, kinds, count. */
export function checkAttributeDeclaration(type: string, declared: unknown): AttributeDeclaration {
	if (declared === undefined) return {};
	if (typeof declared !== 'object' || declared === null || Array.isArray(declared)) {
		throw new Error(`${type}: static attributes must be an object of name -> kind (${ATTRIBUTE_KINDS.join(', ')})`);
	}
	const entries = Object.entries(declared);
	if (entries.length > ATTRIBUTE_LIMITS.perType) throw new Error(`${type}: at most ${ATTRIBUTE_LIMITS.perType} search attributes per type, got ${entries.length}`);
	for (const [name, kind] of entries) {
		const reserved = reservedName(name);
		if (reserved) throw new Error(`${type}: search attribute name ${reserved}`);
		if (!NAME_PATTERN.test(name)) throw new Error(`${type}: search attribute name ${JSON.stringify(name)} must be a letter then up to 63 letters, digits or _`);
		if (!(ATTRIBUTE_KINDS as readonly unknown[]).includes(kind)) {
			throw new Error(`${type}: search attribute "${name}" has kind ${JSON.stringify(kind)}; use one of ${ATTRIBUTE_KINDS.join(', ')}`);
		}
	}
	return declared as AttributeDeclaration;
}

const utf8 = new TextEncoder();
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** One value checked against its kind, as stored; `what` names it in the error. */
function storedValue(kind: AttributeKind, value: unknown, what: string, code: ErrorCode): StoredAttributeValue {
	const fail = (expected: string) => new ValidationError(code, `${what} must be ${expected}, got ${describe(value)}`);
	switch (kind) {
		case 'keyword':
			if (typeof value !== 'string') throw fail('a string (keyword)');
			// A lone UTF-16 surrogate has no UTF-8 form: stored, no query could ever name it.
			if (LONE_SURROGATE.test(value)) throw fail('well-formed Unicode (it has a lone UTF-16 surrogate, which no query could match)');
			if (utf8.encode(value).length > ATTRIBUTE_LIMITS.keywordBytes) throw fail(`a string of at most ${ATTRIBUTE_LIMITS.keywordBytes} UTF-8 bytes`);
			return value;
		case 'number':
			if (typeof value !== 'number' || !Number.isFinite(value)) throw fail('a finite number');
			return value;
		case 'boolean':
			if (typeof value !== 'boolean') throw fail('true or false');
			return value;
		case 'datetime': {
			// Text (a JSON body's only way to write a time) by the rule queries read times with: ISO 8601, or ms of 12 digits or more.
			const ms = value instanceof Date ? value.getTime() : typeof value === 'string' ? (parseDatetimeText(value) ?? value) : value;
			if (typeof ms !== 'number' || !Number.isSafeInteger(ms)) throw fail(`a Date, a number of whole milliseconds since the epoch, or text: ${DATETIME_TEXT}`);
			if (Math.abs(ms) > MAX_DATETIME_MS) throw fail(`a time JavaScript's Date can hold (at most ${MAX_DATETIME_MS} ms either side of the epoch)`);
			return ms;
		}
	}
}

function describe(value: unknown): string {
	if (value === null) return 'null';
	if (Array.isArray(value)) return 'an array';
	return typeof value === 'string' ? JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value) : typeof value === 'object' ? 'an object' : String(value);
}

function kindOf(type: string, declared: AttributeDeclaration, name: string, code: ErrorCode): AttributeKind {
	const reserved = reservedName(name);
	if (reserved) throw new ValidationError(code, `search attribute name ${reserved}`);
	const kind = Object.hasOwn(declared, name) ? declared[name] : undefined;
	if (!kind) {
		const names = Object.keys(declared);
		throw new ValidationError(
			code,
			`workflow type "${type}" declares no search attribute ${JSON.stringify(name)}; ${names.length ? `declared: ${names.join(', ')}` : 'it declares none (static attributes)'}`,
		);
	}
	return kind;
}

/**
 * Applies an update (create's `attributes`, a `step.setAttributes`) to the current attributes:
 * each named value is checked against its declared kind, `null` clears it. Throws
 * `INVALID_SEARCH_ATTRIBUTES` naming the first problem; the current attributes are not changed.
 */
export function applyAttributeUpdate(type: string, declared: AttributeDeclaration, current: StoredAttributes, update: unknown): StoredAttributes {
	const code = ErrorCode.InvalidSearchAttributes;
	if (typeof update !== 'object' || update === null || Array.isArray(update)) {
		throw new ValidationError(code, `search attributes must be an object of name -> value, got ${describe(update)}`);
	}
	const next: StoredAttributes = { ...current };
	for (const [name, value] of Object.entries(update)) {
		const kind = kindOf(type, declared, name, code);
		if (value === null || value === undefined) delete next[name];
		else next[name] = storedValue(kind, value, `search attribute "${name}" (${kind})`, code);
	}
	return next;
}

/** The stored JSON of attributes (null when none is set): the instance row's and the index entry's column. */
export function attributesJson(attributes: StoredAttributes): string | null {
	const names = Object.keys(attributes).sort();
	return names.length === 0 ? null : JSON.stringify(Object.fromEntries(names.map((n) => [n, attributes[n]])));
}

export function parseAttributes(json: string | null | undefined): StoredAttributes {
	return json ? (JSON.parse(json) as StoredAttributes) : {};
}

/**
 * Checks a listing's attribute filters against the type's declaration: unknown names and values
 * of the wrong kind are refused with `INVALID_QUERY`; ranges only on numbers and datetimes.
 */
export function checkAttributeFilters(type: string, declared: AttributeDeclaration, filters: unknown): Record<string, CheckedCondition> {
	const code = ErrorCode.InvalidQuery;
	if (typeof filters !== 'object' || filters === null || Array.isArray(filters)) throw new ValidationError(code, 'attributes must be an object of name -> condition');
	const entries = Object.entries(filters).filter(([, c]) => c !== undefined);
	if (entries.length > MAX_ATTRIBUTE_FILTERS) throw new ValidationError(code, `at most ${MAX_ATTRIBUTE_FILTERS} attribute conditions per query`);
	const checked: Record<string, CheckedCondition> = {};
	const listed = entries.reduce((n, [, c]) => n + (Array.isArray(c) ? c.length : 0), 0);
	if (listed > MAX_LIST_VALUES_PER_QUERY) throw new ValidationError(code, `the lists of one query hold at most ${MAX_LIST_VALUES_PER_QUERY} values together, got ${listed}`);
	for (const [name, condition] of entries) {
		const kind = kindOf(type, declared, name, code);
		const what = `attr.${name} (${kind})`;
		if (Array.isArray(condition)) {
			if (condition.length === 0 || condition.length > MAX_IN_VALUES) throw new ValidationError(code, `${what}: a list holds 1 to ${MAX_IN_VALUES} values`);
			const values = [...new Set(condition.map((v) => filterValue(kind, v, what, code)))];
			checked[name] = values.length === 1 ? { op: 'eq', value: values[0]! } : { op: 'in', values };
		} else if (typeof condition === 'object' && condition !== null && !(condition instanceof Date)) {
			if (kind !== 'number' && kind !== 'datetime') throw new ValidationError(code, `${what}: ranges (gt, gte, lt, lte) apply to number and datetime attributes`);
			const range: { gt?: number; gte?: number; lt?: number; lte?: number } = {};
			for (const [bound, value] of Object.entries(condition)) {
				if (!['gt', 'gte', 'lt', 'lte'].includes(bound)) throw new ValidationError(code, `${what}: unknown bound ${JSON.stringify(bound)}; use gt, gte, lt, lte`);
				if (value !== undefined) range[bound as 'gt'] = filterValue(kind, value, `${what}.${bound}`, code) as number;
			}
			if (Object.keys(range).length === 0) throw new ValidationError(code, `${what}: give at least one bound`);
			checked[name] = { op: 'range', ...range };
		} else {
			checked[name] = { op: 'eq', value: filterValue(kind, condition, what, code) };
		}
	}
	return checked;
}

/**
 * A value in a filter: as stored, except that a datetime may also be text (ms or ISO 8601), read
 * by the same parser as the REST listing's `attr.<name>=`, so that a JSON query (a bulk
 * operation's) accepts what the query string does.
 */
function filterValue(kind: AttributeKind, value: unknown, what: string, code: ErrorCode): StoredAttributeValue {
	if (kind !== 'datetime' || typeof value !== 'string') return storedValue(kind, value, what, code);
	const ms = parseDatetimeText(value);
	if (ms === undefined) throw new ValidationError(code, `${what} must be a Date, whole milliseconds since the epoch, or text: ${DATETIME_TEXT}; got ${describe(value)}`);
	return ms;
}

/** Checks that `name` is a declared attribute (an order or a grouping names one). */
export function assertDeclaredAttribute(type: string, declared: AttributeDeclaration, name: string): AttributeKind {
	return kindOf(type, declared, name, ErrorCode.InvalidQuery);
}

/**
 * Parses one query-string value of an attribute of `kind` (the REST API's `attr.<name>=`):
 * a keyword as is, a number in JSON syntax, `true`/`false`, a datetime as ms (12 digits or more)
 * or ISO 8601 (engine/index/attribute-text.ts). Undefined when it does not parse, so the caller
 * can say which parameter is wrong.
 */
export function parseAttributeText(kind: AttributeKind, text: string): StoredAttributeValue | undefined {
	switch (kind) {
		case 'keyword':
			return text;
		case 'number':
			return parseNumberText(text);
		case 'boolean':
			return text === 'true' ? true : text === 'false' ? false : undefined;
		case 'datetime':
			return parseDatetimeText(text);
	}
}

/** SQLite has no boolean: the shards store booleans as 0 and 1 (and list them back as booleans). */
export function toSqlValue(value: StoredAttributeValue): string | number {
	return typeof value === 'boolean' ? (value ? 1 : 0) : value;
}
