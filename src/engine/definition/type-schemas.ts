import type { AttributeDeclaration } from '../index/search-attributes';
import type { StandardJSONSchemaV1 } from '@standard-schema/spec';
import type { ResolvedEntry } from './registry';
import { isStandardSchema } from './schema-validation';

/** A JSON Schema document (draft 2020-12, the dialect of OpenAPI 3.1). */
export type JsonSchema = Record<string, unknown>;

/** What a client must send for a payload or an event: its JSON Schema, or why there is none. */
export interface ShapeDescription {
	/** The accepted input as JSON Schema; null when the declaration cannot say (see `note`). */
	schema: JsonSchema | null;
	/** False when the declaration accepts "nothing" (`z.undefined()`, `.optional()`): the body may be left out. */
	required: boolean;
	/** Set when `schema` is null or partial: a type-only marker, or a validator without JSON Schema output. */
	note?: string;
}

export interface TypeSchemas {
	type: string;
	payload: ShapeDescription;
	/** The class's search attributes: name -> kind (`{}`: none). */
	attributes: AttributeDeclaration;
	events: ({ name: string } & ShapeDescription)[];
}

const TYPE_MARKER_NOTE = 'declared as a type only (no runtime schema): any JSON value is accepted';
const NO_JSON_SCHEMA_NOTE = 'the validator does not implement Standard JSON Schema; the value is still validated when sent';

/**
 * The JSON Schemas of a workflow type's payload and events, derived from
 * their Standard Schema validators through the Standard JSON Schema interface
 * (`~standard.jsonSchema`, which zod 4, valibot and arktype implement), so
 * no validator library is imported here. Parts JSON Schema cannot express
 * (an `undefined`, a transform) become "any" rather than failing the document.
 */
export async function typeSchemas(entry: Pick<ResolvedEntry, 'type' | 'workflow'> & { attributes?: AttributeDeclaration }): Promise<TypeSchemas> {
	const events = Object.entries(entry.workflow.events ?? {});
	return {
		type: entry.type,
		attributes: entry.attributes ?? {},
		payload: await describeShape(entry.workflow.payload, 'no payload schema declared: any JSON value is accepted'),
		events: await Promise.all(events.map(async ([name, declaration]) => ({ name, ...(await describeShape(declaration, TYPE_MARKER_NOTE)) }))),
	};
}

async function describeShape(declaration: unknown, noSchemaNote: string): Promise<ShapeDescription> {
	if (!isStandardSchema(declaration)) return { schema: null, required: true, note: noSchemaNote };
	const required = (await declaration['~standard'].validate(undefined)).issues !== undefined;
	const converter = (declaration['~standard'] as Partial<StandardJSONSchemaV1.Props>).jsonSchema;
	if (!converter) return { schema: null, required, note: NO_JSON_SCHEMA_NOTE };
	try {
		const { $schema: _, ...schema } = converter.input({ target: 'draft-2020-12', libraryOptions: { unrepresentable: 'any' } });
		return { schema, required };
	} catch (error) {
		return { schema: null, required, note: `no JSON Schema: ${error instanceof Error ? error.message : String(error)}` };
	}
}
