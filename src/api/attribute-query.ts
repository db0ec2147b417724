import { ErrorCode, ValidationError } from '../engine/support/errors';
import type { ListOrder } from '../engine/index/index-query';
import type { IndexLayout } from '../engine/definition/registry';
import { assertDeclaredAttribute, parseAttributeText, type AttributeKind, type StoredAttributeValue } from '../engine/index/search-attributes';
import { DATETIME_TEXT } from '../engine/index/attribute-text';
import type { TypeSchemas } from '../engine/definition/type-schemas';

/**
 * The REST form of attribute queries (`GET /workflows?type=payment&attr.customerId=42&attr.amount.gte=100&order=-attr.amount`):
 * `attr.<name>=<value>` is equality, the same parameter repeated is "any of", `attr.<name>.<gt|gte|lt|lte>=<value>`
 * bounds a number or datetime. Values are read by the attribute's kind: a number in JSON syntax, `true`/`false`,
 * a datetime as ms (12 digits or more) or ISO 8601. What does not parse, or names no declared attribute (or a
 * reserved name), is a 400 INVALID_QUERY.
 */
// Any name: the declaration decides (an undeclared or reserved one is refused saying so).
const PARAM = /^attr\.([^.]+)(?:\.(gt|gte|lt|lte))?$/;
const BOUNDS = ['gt', 'gte', 'lt', 'lte'] as const;

/** The attribute conditions of a query string (every value of repeated parameters), checked for parsing; the client checks the rest. */
export function attributeParams(queries: Record<string, string[]>, layout: IndexLayout, type: string | undefined): Record<string, unknown> | undefined {
	const names = Object.keys(queries).filter((key) => key.startsWith('attr.'));
	if (names.length === 0) return undefined;
	if (type === undefined) throw new ValidationError(ErrorCode.InvalidQuery, 'attr.* filters need a type: search attributes are declared per workflow type');
	const declared = layout.get(type).attributes ?? {};
	// No prototype: a name such as `constructor` must not read as already given.
	const conditions: Record<string, unknown> = Object.create(null);
	for (const key of names) {
		const match = PARAM.exec(key);
		if (!match) throw new ValidationError(ErrorCode.InvalidQuery, `unknown parameter ${JSON.stringify(key)}; use attr.<name>=<value> or attr.<name>.<gt|gte|lt|lte>=<value>`);
		const [, name, bound] = match as unknown as [string, string, (typeof BOUNDS)[number] | undefined];
		const kind = assertDeclaredAttribute(type, declared, name);
		const values = queries[key]!.map((text) => parsed(kind, key, text));
		if (bound) {
			if (values.length > 1) throw new ValidationError(ErrorCode.InvalidQuery, `${key} is given ${values.length} times; give each bound once`);
			const existing = conditions[name];
			if (existing !== undefined && (typeof existing !== 'object' || Array.isArray(existing))) throw mixed(name);
			conditions[name] = { ...(existing as object | undefined), [bound]: values[0] };
		} else {
			if (conditions[name] !== undefined) throw mixed(name);
			conditions[name] = values.length === 1 ? values[0] : values;
		}
	}
	return { ...conditions };
}

function mixed(name: string): ValidationError {
	return new ValidationError(ErrorCode.InvalidQuery, `attr.${name}: give a value (or several) or bounds (.gt, .gte, .lt, .lte), not both`);
}

function parsed(kind: AttributeKind, key: string, text: string): StoredAttributeValue {
	const value = parseAttributeText(kind, text);
	if (value === undefined) {
		const expected = { keyword: 'text', number: 'a number in JSON syntax (20, -1.5, 2e3)', boolean: 'true or false', datetime: DATETIME_TEXT }[kind];
		throw new ValidationError(ErrorCode.InvalidQuery, `${key} must be ${expected} (a ${kind} attribute), got ${JSON.stringify(text.slice(0, 40))}`);
	}
	return value;
}

/** The REST `order`: `created` (default), `updated`, `attr.<name>` (ascending) or `-attr.<name>` (descending). */
export function listOrderParam(order: string | undefined): ListOrder | undefined {
	if (order === undefined) return undefined;
	if (order === 'created') return 'createdAt';
	if (order === 'updated') return 'updatedAt';
	const descending = order.startsWith('-');
	return `attr:${order.slice(descending ? 6 : 5)}:${descending ? 'desc' : 'asc'}`;
}

/** The order values the REST API accepts (its query schema checks the shape; the client checks the name). */
export const ORDER_PARAM = /^(created|updated|-?attr\.[A-Za-z][A-Za-z0-9_]{0,63})$/;

const KIND_SCHEMA: Record<AttributeKind, Record<string, unknown>> = {
	// maxLength counts characters; the limit is UTF-8 bytes (a character is 1 to 4), which no JSON Schema keyword counts, so the description says it.
	keyword: { type: 'string', maxLength: 256, description: 'at most 256 UTF-8 bytes' },
	number: { type: 'number' },
	boolean: { type: 'boolean' },
	datetime: { type: 'integer', description: 'milliseconds since the epoch' },
};

type Document = { paths?: Record<string, any>; components?: { schemas?: Record<string, unknown> } };

/**
 * Writes the registry's search attributes into the OpenAPI document: a `SearchAttributes.<type>`
 * schema per type (what create's `attributes` accepts), and on `GET /workflows` one query
 * parameter per declared attribute (and its bounds, for numbers and datetimes), naming the
 * types that declare it and its kind in each.
 */
export function documentAttributes(document: Document, schemas: TypeSchemas[]): void {
	const components = (document.components ??= {}).schemas ?? (document.components.schemas = {});
	const byName = new Map<string, { type: string; kind: AttributeKind }[]>();
	for (const { type, attributes } of schemas) {
		const names = Object.entries(attributes);
		if (names.length === 0) continue;
		components[`SearchAttributes.${type}`] = {
			type: 'object',
			description: `The search attributes of "${type}"; null clears one.`,
			properties: Object.fromEntries(names.map(([name, kind]) => [name, { anyOf: [KIND_SCHEMA[kind], { type: 'null' }] }])),
			additionalProperties: false,
		};
		for (const [name, kind] of names) byName.set(name, [...(byName.get(name) ?? []), { type, kind }]);
	}
	const list = document.paths?.['/workflows']?.get;
	if (!list) return;
	const parameters: unknown[] = (list.parameters ??= []);
	for (const [name, declarations] of byName) {
		const where = declarations.map((d) => `${d.type} (${d.kind})`).join(', ');
		parameters.push({
			name: `attr.${name}`,
			in: 'query',
			required: false,
			description: `Search attribute of ${where}, with type=: equal to this value; repeat the parameter for any of several.`,
			schema: { type: 'array', items: { type: 'string' } },
			style: 'form',
			explode: true,
		});
		if (declarations.some((d) => d.kind === 'number' || d.kind === 'datetime')) {
			for (const bound of BOUNDS) {
				parameters.push({ name: `attr.${name}.${bound}`, in: 'query', required: false, description: `Bound (${bound}) on ${where}.`, schema: { type: 'string' } });
			}
		}
	}
}
