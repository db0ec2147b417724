import type { StandardSchemaV1 } from '@standard-schema/spec';
import { ValidationError, type ErrorCode } from './errors';

export function isStandardSchema(value: unknown): value is StandardSchemaV1 {
	return typeof value === 'object' && value !== null && '~standard' in value;
}

/**
 * Validates `value` with a Standard Schema (zod, valibot, arktype …) and
 * returns the schema's output. Without a schema the value passes unchanged.
 */
export async function validateWith(schema: unknown, value: unknown, code: ErrorCode, what: string): Promise<unknown> {
	if (!isStandardSchema(schema)) return value;
	const result = await schema['~standard'].validate(value);
	if (result.issues) {
		const details = result.issues
			.slice(0, 5)
			.map((issue) => {
				const path = issue.path?.map((p) => (typeof p === 'object' ? p.key : p)).join('.');
				return path ? `${path}: ${issue.message}` : issue.message;
			})
			.join('; ');
		throw new ValidationError(code, `invalid ${what}: ${details}`);
	}
	return result.value;
}
