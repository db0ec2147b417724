import { z } from '@hono/zod-openapi';
import { StatusSchema } from '../operations/schemas';
import { ORDER_PARAM } from './attribute-query';
import { DATETIME_TEXT, parseDatetimeText } from '../engine/index/attribute-text';

/**
 * Schemas of the routes that are not instance operations (listing, types,
 * rebalance); those of the operations are in `src/operations/schemas.ts`.
 * They validate requests and generate /openapi.json: the document cannot drift from the code.
 */

/** A time bound: the one parser of time conditions (engine/index/attribute-text.ts), as `attr.<datetime>` takes them. */
const epochMs = z
	.string()
	.refine((text) => parseDatetimeText(text) !== undefined, `must be ${DATETIME_TEXT}`)
	.openapi({ description: 'Milliseconds since the epoch (12 digits or more) or ISO 8601 (2024-05-01, 2024-05-01T12:00:00Z).', example: '2024-05-01' });

/** The group whose index a read uses (docs/residency.md). */
export const GroupParam = z.string().max(32).optional().openapi({ description: "The group whose index to read (its shards live in the group's jurisdiction); default: the default group.", example: 'eu' });

export const ListQuery = z.object({
	type: z.string().max(64).optional().openapi({ description: 'Omit to list every type.' }),
	status: z.string().max(200).optional().openapi({ description: 'One status, or several separated by commas.', example: 'waiting,sleeping' }),
	limit: z.string().regex(/^\d{1,4}$/, 'must be a whole number from 1 to 1000').optional().openapi({ example: '50' }),
	order: z
		.string()
		.regex(ORDER_PARAM, 'must be created, updated, attr.NAME or -attr.NAME')
		.optional()
		.openapi({
			description:
				'created (default): newest created first; a page walk lists every instance that existed when it began exactly once. updated: most recently changed first; instances that change during a walk can be skipped or repeated. attr.<name> (ascending) or -attr.<name> (descending): by a search attribute of the type (needs type=), then by creation; only instances that have it.',
			example: '-attr.amount',
		}),
	idPrefix: z.string().max(100).optional().openapi({ description: 'Only ids that start with this.', example: 'pay-2026-11' }),
	// No length bound here: the cursor's owner refuses anything it did not issue with INVALID_CURSOR.
	cursor: z.string().optional().openapi({ description: 'The nextCursor of the previous page (same filters and order).' }),
	createdAfter: epochMs.optional(),
	createdBefore: epochMs.optional(),
	updatedAfter: epochMs.optional(),
	updatedBefore: epochMs.optional(),
	codeVersion: z.string().max(64).optional().openapi({ description: "Only instances created by this code version (the registry's `version` of their type).", example: '2026-11-26' }),
	parent: z.string().max(100).optional().openapi({ description: 'Only the child workflows of this instance (started by its step.invoke or step.start).', example: 'order-17' }),
	group: GroupParam,
	groups: z
		.string()
		.max(400)
		.optional()
		.openapi({
			description:
				'A listing across groups: * (every declared group) or names separated by commas. One page of the newest instances of each group that answered, merged (no cursor); the answer names the groups that answered and those that failed (docs/residency.md).',
			example: 'default,eu',
		}),
});

export const SummarySchema = z
	.object({
		id: z.string(),
		type: z.string(),
		status: StatusSchema,
		createdAt: z.number().int(),
		updatedAt: z.number().int(),
		codeVersion: z.string().optional().openapi({ description: 'The code version that created the instance, when its type has one.' }),
		attributes: z
			.record(z.string(), z.union([z.string(), z.number(), z.boolean()]))
			.optional()
			.openapi({ description: 'The search attributes set (a datetime as ms since the epoch); absent when none is.', example: { customerId: '42', amount: 120 } }),
		parentId: z.string().optional().openapi({ description: 'The instance that started this one as its child workflow.' }),
		group: z.string().optional().openapi({ description: 'Its group, in a listing across groups (groups=).' }),
	})
	.openapi('WorkflowSummary');

export const ListSchema = z
	.object({
		items: z.array(SummarySchema),
		nextCursor: z.string().nullable(),
		groups: z
			.object({
				answered: z.array(z.string()),
				failed: z.array(z.object({ group: z.string(), error: z.object({ code: z.string().optional(), message: z.string() }) })),
			})
			.optional()
			.openapi({ description: 'In a listing across groups (groups=): which groups answered, and which did not (their instances are missing).' }),
	})
	.openapi('WorkflowList');

export const TypesSchema = z
	.object({
		types: z.array(
			z.object({
				type: z.string(),
				shards: z.number().int(),
				previousShards: z.number().int().optional(),
				counts: z.record(z.string(), z.number().int()),
				backlog: z.object({
					pending: z.number().int().openapi({ description: 'Instances whose index delivery has failed at least once and not succeeded since.' }),
					oldestAgeMs: z.number().int().nullable().openapi({ description: "Time since the longest-waiting one's first failed delivery." }),
					oldest: z.array(z.object({ id: z.string(), since: z.number().int() })).openapi({ description: 'Up to 5 longest-waiting ids.' }),
				}),
			}),
		),
	})
	.openapi('WorkflowTypes');

export const RebalanceBody = z
	.object({
		cursor: z.string().max(600).nullable().optional(),
		batchSize: z.number().int().min(1).max(1000).optional(),
		group: z.string().max(32).optional().openapi({ description: "The group whose index to walk (docs/residency.md); default: the default group.", example: 'eu' }),
	})
	.openapi('RebalanceRequest');

export const RebalanceSchema = z
	.object({
		type: z.string(),
		shards: z.number().int(),
		previousShards: z.number().int().nullable(),
		shardsDone: z.number().int(),
		totalShards: z.number().int(),
		scanned: z.number().int(),
		moved: z.number().int(),
		cursor: z.string().nullable(),
		done: z.boolean(),
		canDropPreviousShards: z.boolean(),
		tombstonesRemoved: z.object({ moved: z.number().int(), deleted: z.number().int() }),
		tombstonesLeft: z.boolean(),
		message: z.string(),
	})
	.openapi('RebalanceProgress');

export const AttributeCountsQuery = z.object({
	group: GroupParam,
	by: z.string().regex(/^attr\.[A-Za-z][A-Za-z0-9_]{0,63}$/, 'must be attr.<name>').openapi({ description: 'The attribute to group by.', example: 'attr.region' }),
	status: z.string().max(200).optional().openapi({ description: 'One status, or several separated by commas.', example: 'running' }),
	createdAfter: epochMs.optional(),
	createdBefore: epochMs.optional(),
	// Answered by each shard on the entry row its attribute index leads to, as createdAfter/Before are.
	updatedAfter: epochMs.optional(),
	updatedBefore: epochMs.optional(),
});

export const AttributeCountsSchema = z
	.object({
		type: z.string(),
		attribute: z.string(),
		groups: z.array(z.object({ value: z.union([z.string(), z.number(), z.boolean()]), count: z.number().int() })).openapi({ description: 'One per value, in value order.' }),
		more: z.boolean().openapi({ description: 'A shard had more than 1,000 values: the rest were left out.' }),
	})
	.openapi('AttributeCounts');
