import type { z } from '@hono/zod-openapi';
import { ErrorCode, ValidationError } from '../engine/support/errors';

/**
 * Refuses a query parameter a listing does not take (`?stauts=waiting`, `?sort=...`): ignored,
 * it would answer a different question than the one asked (every status, the default order)
 * with no error to say so. Names are those of the route's query schema, plus `attr.*` where
 * the route takes attribute conditions (their names are checked against the type's declaration).
 */
export function refuseUnknownParams(queries: Record<string, string[]>, schema: z.ZodObject, options: { attributes: boolean }): void {
	const known = Object.keys(schema.shape);
	for (const name of Object.keys(queries)) {
		if (known.includes(name) || (options.attributes && name.startsWith('attr.'))) continue;
		throw new ValidationError(
			ErrorCode.InvalidQuery,
			`unknown query parameter ${JSON.stringify(name.slice(0, 80))}; this listing takes ${[...known, ...(options.attributes ? ['attr.<name>'] : [])].join(', ')}`,
		);
	}
}
