import { z } from '@hono/zod-openapi';
import { strictRoute } from './strict-route';
import type { Registry } from '../engine/definition/registry';
import { ATTRIBUTE_KINDS } from '../engine/index/search-attributes';
import { documentAttributes } from './attribute-query';
import { typeSchemas, type JsonSchema, type ShapeDescription, type TypeSchemas } from '../engine/definition/type-schemas';
import { apiRoutes, type ApiRoutes } from './routes';
import { errors, json } from './openapi-responses';

const Shape = {
	schema: z.record(z.string(), z.unknown()).nullable().openapi({ description: 'JSON Schema (draft 2020-12) of what is accepted; null when the declaration has none (see note).' }),
	required: z.boolean().openapi({ description: 'False when the declaration accepts no value: the body may be left out.' }),
	note: z.string().optional(),
};

export const TypeSchemasSchema = z
	.object({
		type: z.string(),
		shards: z.number().int(),
		previousShards: z.number().int().optional(),
		payload: z.object(Shape),
		events: z.array(z.object({ name: z.string(), ...Shape })),
		attributes: z.record(z.string(), z.enum(ATTRIBUTE_KINDS)).openapi({ description: 'The search attributes the type declares: name -> kind.', example: { customerId: 'keyword', amount: 'number' } }),
	})
	.openapi('WorkflowTypeSchemas');

/** A registry's schemas are fixed for the life of the isolate: derive them once. */
const cache = new WeakMap<Registry, Promise<TypeSchemas[]>>();
export function registrySchemas(registry: Registry): Promise<TypeSchemas[]> {
	let found = cache.get(registry);
	if (!found) cache.set(registry, (found = Promise.all(registry.types().map((type) => typeSchemas(registry.get(type))))));
	return found;
}

/** `GET /types/{type}`: a type's payload and event schemas as JSON Schema (what the dashboard's forms show and check). */
export function typeSchemaRoutes(registry: Registry): ApiRoutes {
	const app = apiRoutes();
	app.openapi(
		strictRoute({
			method: 'get',
			path: '/types/{type}',
			summary: "A workflow type's payload schema and the schema of each declared event, as JSON Schema",
			request: { params: z.object({ type: z.string().max(64).openapi({ param: { name: 'type', in: 'path' }, example: 'payment' }) }) },
			responses: { 200: json(TypeSchemasSchema, 'The type'), ...errors(400, 401) },
		}),
		async (c) => {
			const { shards, previousShards, type } = registry.get(c.req.valid('param').type);
			const schemas = (await registrySchemas(registry)).find((s) => s.type === type)!;
			return c.json({ ...schemas, shards, ...(previousShards !== undefined ? { previousShards } : {}) }, 200);
		},
	);
	return app;
}

type Document = { paths?: Record<string, any>; components?: { schemas?: Record<string, unknown> } };

/**
 * Writes the registry's schemas into the generated OpenAPI document: the
 * create body becomes a union discriminated by `type` (one member per type,
 * with its payload schema), and every declared event gets its own route with
 * its body schema, beside the generic `/events/{name}` route. The request
 * validators stay the generic ones: the engine refuses a bad payload with its
 * own codes (INVALID_PAYLOAD, INVALID_EVENT_PAYLOAD), as before.
 */
export function withTypeSchemas<D extends Document>(document: D, schemas: TypeSchemas[]): D {
	const components = (document.components ??= {}).schemas ?? (document.components.schemas = {});
	const generic = components.CreateWorkflow as { properties: Record<string, unknown>; description?: string } | undefined;
	if (generic && schemas.length > 0) {
		const mapping: Record<string, string> = {};
		const members = schemas.map(({ type, payload, attributes }) => {
			const name = `CreateWorkflow.${type}`;
			mapping[type] = `#/components/schemas/${name}`;
			components[name] = {
				type: 'object',
				properties: {
					type: { type: 'string', const: type }, id: generic.properties.id, payload: withNote(payload),
					...(Object.keys(attributes).length > 0 ? { attributes: { $ref: `#/components/schemas/SearchAttributes.${type}` } } : {}),
				},
				required: payload.required ? ['type', 'payload'] : ['type'],
			};
			return { $ref: mapping[type] };
		});
		components.CreateWorkflow = { oneOf: members, discriminator: { propertyName: 'type', mapping } };
	}
	documentAttributes(document, schemas);
	const route = document.paths?.['/workflows/{id}/events/{name}']?.post;
	if (route) {
		for (const [event, declarations] of eventsByName(schemas)) {
			const body = declarations.length === 1 ? withNote(declarations[0]!.shape) : { anyOf: declarations.map((d) => ({ ...withNote(d.shape), title: d.type })) };
			const types = declarations.map((d) => d.type).join(', ');
			document.paths![`/workflows/{id}/events/${encodeURIComponent(event)}`] = {
				post: {
					...route,
					summary: `Send the "${event}" event (declared by ${types})`,
					parameters: route.parameters.filter((p: { name: string }) => p.name !== 'name'),
					requestBody: { required: declarations.some((d) => d.shape.required), content: { 'application/json': { schema: body } } },
				},
			};
		}
	}
	return document;
}

function withNote(shape: ShapeDescription): JsonSchema {
	const schema = shape.schema ?? {};
	return shape.note ? { ...schema, description: shape.note } : schema;
}

function eventsByName(schemas: TypeSchemas[]): Map<string, { type: string; shape: ShapeDescription }[]> {
	const byName = new Map<string, { type: string; shape: ShapeDescription }[]>();
	for (const { type, events } of schemas) {
		for (const { name, ...shape } of events) byName.set(name, [...(byName.get(name) ?? []), { type, shape }]);
	}
	return new Map([...byName].sort(([a], [b]) => (a < b ? -1 : 1)));
}
