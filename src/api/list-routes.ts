import { createRoute, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { IndexClient, type ListQuery as IndexListQuery } from '../client/index-client';
import type { ListOrder, TimeOrder } from '../engine/index/index-query';
import { listAcrossGroups } from '../client/group-listing';
import { ErrorCode, ValidationError } from '../engine/support/errors';
import { attributeParams, listOrderParam } from './attribute-query';
import { refuseUnknownParams, statusParam } from './query-params';
import { strictRoute } from './strict-route';
import { parseDatetimeText } from '../engine/index/attribute-text';
import { backlogSummary } from '../client/reconcile';
import type { Registry } from '../engine/definition/registry';
import type { WorkflowStatus } from '../engine/support/statuses';
import type { ApiEnv } from './env';
import { errors, json } from './openapi-responses';
import { apiRoutes, schemaFailure, type ApiRoutes } from './routes';
import { errorJson } from './http-errors';
import { AttributeCountsQuery, AttributeCountsSchema, GroupParam, ListQuery, ListSchema, TypesSchema } from './schemas';
import { groupScoped } from '../client/group-scope';

/** `GET /workflows?groups=`: one merged page of several groups' listings, naming the groups that answered (group-listing.ts). */
async function acrossGroups(env: ApiEnv, registry: Registry, q: Record<string, string | undefined>, attributes: unknown, order: string | undefined) {
	if (q.cursor !== undefined || q.group !== undefined) throw new ValidationError(ErrorCode.InvalidQuery, 'groups= lists one merged page across groups: it takes no cursor and no group= (page through one group with group=)');
	if (order !== undefined && order !== 'createdAt' && order !== 'updatedAt') throw new ValidationError(ErrorCode.InvalidQuery, 'groups= orders by created or updated only');
	const names = q.groups === '*' ? undefined : q.groups!.split(',').map((name) => name.trim());
	const num = (v: string | undefined) => (v === undefined ? undefined : parseDatetimeText(v));
	const listing = await listAcrossGroups(
		env,
		registry,
		{
			...(q.type !== undefined ? { type: q.type } : {}),
			...defined({ status: statusParam<WorkflowStatus>(q.status) }),
			...(q.limit !== undefined ? { limit: Number(q.limit) } : {}),
			...(order !== undefined ? { order: order as TimeOrder } : {}),
			...(attributes ? { attributes: attributes as IndexListQuery['attributes'] } : {}),
			...(q.idPrefix !== undefined ? { idPrefix: q.idPrefix } : {}),
			...defined({ createdAfter: num(q.createdAfter), createdBefore: num(q.createdBefore), updatedAfter: num(q.updatedAfter), updatedBefore: num(q.updatedBefore) }),
			...(q.codeVersion !== undefined ? { codeVersion: q.codeVersion } : {}),
			...(q.parent !== undefined ? { parent: q.parent } : {}),
		},
		names,
	);
	return {
		items: listing.items.map(({ id, type, status, createdAt, updatedAt, codeVersion, parentId, attributes: values, group }) => ({
			id, type, status, createdAt, updatedAt, ...(codeVersion ? { codeVersion } : {}), ...(parentId ? { parentId } : {}), ...(values ? { attributes: values } : {}), group,
		})),
		nextCursor: null,
		groups: { answered: listing.answered, failed: listing.failed },
	};
}

/** GET /workflows (the listing from the sharded index) and GET /types (each type's shards, counts and backlog). */
export function listRoutes(registry: Registry, now: () => number): ApiRoutes {
	const app = apiRoutes();
	const index = (c: Context<{ Bindings: ApiEnv }>, group?: string) => new IndexClient(c.env, registry, group !== undefined ? { group } : {});

	app.openapi(
		createRoute({
			method: 'get',
			path: '/workflows',
			summary: 'List instances from the sharded index, newest first (by creation, or by update with order=updated), by keyset pages',
			request: { query: ListQuery },
			responses: { 200: json(ListSchema, 'A page of instances'), ...errors(400, 401) },
		}),
		async (c) => {
			const q = c.req.valid('query');
			refuseUnknownParams(c.req.queries(), ListQuery, { attributes: true });
			const num = (v: string | undefined) => (v === undefined ? undefined : parseDatetimeText(v));
			const attributes = attributeParams(c.req.queries(), registry, q.type);
			const order = listOrderParam(q.order);
			if (q.groups !== undefined) return c.json(await acrossGroups(c.env, registry, q, attributes, order), 200);
			const page = await index(c, q.group).list({
				...(q.type !== undefined ? { type: q.type } : {}),
				...defined({ status: statusParam<WorkflowStatus>(q.status) }),
				...(q.limit !== undefined ? { limit: Number(q.limit) } : {}),
				...(order !== undefined ? { order: order as ListOrder } : {}),
				...(attributes ? { attributes: attributes as IndexListQuery['attributes'] } : {}),
				...(q.idPrefix !== undefined ? { idPrefix: q.idPrefix } : {}),
				cursor: q.cursor ?? null,
				...defined({ createdAfter: num(q.createdAfter), createdBefore: num(q.createdBefore), updatedAfter: num(q.updatedAfter), updatedBefore: num(q.updatedBefore) }),
				...(q.codeVersion !== undefined ? { codeVersion: q.codeVersion } : {}),
				...(q.parent !== undefined ? { parent: q.parent } : {}),
			});
			return c.json(
				{
					items: page.items.map(({ id, type, status, createdAt, updatedAt, codeVersion, parentId, attributes }) => ({
						id, type, status, createdAt, updatedAt, ...(codeVersion ? { codeVersion } : {}), ...(parentId ? { parentId } : {}),
						...(attributes ? { attributes } : {}),
					})),
					nextCursor: page.nextCursor,
				},
				200,
			);
		},
	);

	app.openapi(
		strictRoute({
			method: 'get',
			path: '/types',
			summary: 'Registered workflow types with their shards, instance counts per status and index delivery backlog (of one group: ?group=, default the default group)',
			request: { query: z.object({ group: GroupParam }) },
			responses: { 200: json(TypesSchema, 'Types'), ...errors(400, 401) },
		}),
		async (c) => {
			const client = index(c, c.req.valid('query').group);
			const types = await Promise.all(
				registry.types().map(async (type) => {
					const { shards, previousShards } = registry.get(type);
					const [counts, { pending, oldestSince, oldest }] = await Promise.all([client.counts(type), backlogSummary(groupScoped(c.env, client.group.place), type)]);
					const backlog = { pending, oldestAgeMs: oldestSince === null ? null : Math.max(0, now() - oldestSince), oldest };
					return { type, shards, ...(previousShards !== undefined ? { previousShards } : {}), counts, backlog };
				}),
			);
			return c.json({ types }, 200);
		},
	);

	app.openapi(
		createRoute({
			method: 'get',
			path: '/types/{type}/counts',
			summary: 'Instances of a type per value of one of its search attributes (?by=attr.<name>), under status, createdAfter/Before, updatedAfter/Before and attribute filters',
			request: { params: z.object({ type: z.string().max(64).openapi({ param: { name: 'type', in: 'path' }, example: 'payment' }) }), query: AttributeCountsQuery },
			responses: { 200: json(AttributeCountsSchema, 'Counts per value'), ...errors(400, 401) },
		}),
		async (c) => {
			const { type } = c.req.valid('param');
			const q = c.req.valid('query');
			refuseUnknownParams(c.req.queries(), AttributeCountsQuery, { attributes: true });
			const attribute = q.by.slice(5);
			const attributes = attributeParams(c.req.queries(), registry, type);
			const counts = await index(c, q.group).countBy({
				type,
				attribute,
				...defined({ status: statusParam<WorkflowStatus>(q.status) }),
				...defined({
					createdAfter: q.createdAfter === undefined ? undefined : parseDatetimeText(q.createdAfter),
					createdBefore: q.createdBefore === undefined ? undefined : parseDatetimeText(q.createdBefore),
					updatedAfter: q.updatedAfter === undefined ? undefined : parseDatetimeText(q.updatedAfter),
					updatedBefore: q.updatedBefore === undefined ? undefined : parseDatetimeText(q.updatedBefore),
				}),
				...(attributes ? { attributes: attributes as IndexListQuery['attributes'] } : {}),
			});
			return c.json({ type, attribute, ...counts }, 200);
		},
		// A missing or malformed `by` is answered with what it takes, and the type's attributes to choose from,
		// not the schema's own words ("Invalid input: expected string, received undefined").
		(result, c) => {
			if (!result.success && result.target === 'query' && result.error.issues[0]?.path[0] === 'by') {
				const type = c.req.param('type') ?? '';
				// An unknown type is the first thing wrong (registry.get throws UNKNOWN_TYPE, naming the registered ones).
				const names = Object.keys(registry.get(type).attributes);
				const all = c.req.queries('by') ?? [];
				if (all.length > 1) return errorJson(c, 400, ErrorCode.InvalidQuery, `by is given ${all.length} times; give it once`) as never;
				const given = all[0];
				const choose = names.length ? `one of ${type}'s search attributes: ${names.join(', ')}` : `a declared search attribute of the type`;
				return errorJson(c, 400, ErrorCode.InvalidQuery, `${given === undefined ? 'by is required' : `by=${JSON.stringify(given.slice(0, 80))} is not attr.<name>`}: give by=attr.<name>, <name> ${choose}`) as never;
			}
			return schemaFailure(result as never, c) as never;
		},
	);

	return app;
}

function defined<T extends Record<string, unknown>>(values: T): Partial<T> {
	return Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined)) as Partial<T>;
}
