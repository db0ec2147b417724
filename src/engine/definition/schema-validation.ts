import type { StandardSchemaV1 } from '@standard-schema/spec';
import { ValidationError, type ErrorCode } from '../support/errors';

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

/**
 * Validates an event payload against its declaration. A missing payload
 * (`undefined`: no request body) is accepted only when the event declares no
 * payload, which is said with a schema that accepts `undefined` (`z.undefined()`,
 * `z.void()`, `.optional()`). A plain type marker cannot say it at runtime, so
 * it needs a payload (JSON `null` is one): a forgotten body must not pass as `{}`.
 */
export async function validateEventPayload(declaration: unknown, value: unknown, event: string, code: ErrorCode): Promise<unknown> {
	const needsPayload = (cause?: unknown) =>
		new ValidationError(
			code,
			`event "${event}" needs a payload: send it as the JSON body (only an event whose schema accepts undefined is sent without one)`,
			cause === undefined ? undefined : { cause },
		);
	if (value !== undefined) return validateWith(declaration, value, code, `payload for event "${event}"`);
	if (!isStandardSchema(declaration)) throw needsPayload();
	try {
		return await validateWith(declaration, undefined, code, `payload for event "${event}"`);
	} catch (error) {
		throw needsPayload(error);
	}
}
