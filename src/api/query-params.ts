import type { z } from '@hono/zod-openapi';
import { ErrorCode, ValidationError } from '../engine/support/errors';

/** The one parameter every route takes and ignores. */
const CACHE_BUSTER = '_';

/**
 * Refuses a query parameter a listing does not take (`?stauts=waiting`, `?sort=...`): ignored,
 * it would answer a different question than the one asked (every status, the default order)
 * with no error to say so. Names are those of the route's query schema, plus `attr.*` where
 * the route takes attribute conditions (their names are checked against the type's declaration).
 */
export function refuseUnknownParams(queries: Record<string, string[]>, schema: z.ZodObject, options: { attributes: boolean }): void {
	refuseParamsOtherThan(queries, Object.keys(schema.shape), { ...options, what: 'this listing' });
}

/**
 * The same refusal for a route whose parameters are named here (the streams'), and, with `once`,
 * of a parameter given twice (`?after=1&after=2`): which one counts is no rule a caller can rely on.
 */
export function refuseParamsOtherThan(queries: Record<string, string[]>, known: readonly string[], options: { attributes?: boolean; once?: boolean; what: string }): void {
	for (const [name, values] of Object.entries(queries)) {
		// `_`: the cache-buster HTTP clients append (jQuery's `cache: false`, monitors); it asks nothing.
		if (name === CACHE_BUSTER) continue;
		if (known.includes(name) || (options.attributes && name.startsWith('attr.'))) {
			if (options.once && values.length > 1) throw new ValidationError(ErrorCode.InvalidQuery, `${name} is given ${values.length} times; give it once`);
			continue;
		}
		throw new ValidationError(
			ErrorCode.InvalidQuery,
			`unknown query parameter ${JSON.stringify(name.slice(0, 80))}; ${options.what} takes ${known.length || options.attributes ? [...known, ...(options.attributes ? ['attr.<name>'] : [])].join(', ') : 'none'}`,
		);
	}
}

/**
 * A `status` query parameter: one status or several separated by commas (each checked where the
 * query is run). Absent: no filter. Present but empty (`status=`) is refused rather than read as
 * "every status": a filter the caller meant to give is never dropped without a word.
 */
export function statusParam<S extends string>(value: string | undefined): S[] | undefined {
	if (value === undefined) return undefined;
	if (value.trim() === '') throw new ValidationError(ErrorCode.InvalidQuery, 'status is empty: give one status or several separated by commas, or leave status out for every status');
	return value.split(',').map((s) => s.trim()) as S[];
}
