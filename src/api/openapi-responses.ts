import type { z } from '@hono/zod-openapi';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { ErrorSchema } from '../operations/schemas';

/** OpenAPI responses for error statuses: each answers `{error: {code, message}}`. */
export const errors = (...statuses: ContentfulStatusCode[]) =>
	Object.fromEntries(statuses.map((s) => [s, { description: 'Error', content: { 'application/json': { schema: ErrorSchema } } }]));

/** An OpenAPI JSON response. */
export const json = <T extends z.ZodType>(schema: T, description: string) => ({ description, content: { 'application/json': { schema } } });
