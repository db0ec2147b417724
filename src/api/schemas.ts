import { z } from '@hono/zod-openapi';
import { WORKFLOW_STATUSES } from '../engine/types';

/** Schemas that validate requests and generate /openapi.json: the document cannot drift from the code. */

export const ErrorSchema = z
	.object({ error: z.object({ code: z.string().openapi({ example: 'INVALID_PAYLOAD' }), message: z.string() }) })
	.openapi('Error');

export const StatusSchema = z.enum(WORKFLOW_STATUSES).openapi('WorkflowStatus');

export const IdParam = z.object({
	id: z.string().min(1).max(1000).openapi({ param: { name: 'id', in: 'path' }, example: 'payment-123' }),
});

export const CreateBody = z
	.object({
		type: z.string().min(1).max(64).openapi({ example: 'payment' }),
		id: z.string().optional().openapi({ description: '1-100 characters of A-Z a-z 0-9 _ . : -, not only dots, not starting with "__". Omit for a UUIDv7.', example: 'payment-123' }),
		payload: z.unknown().optional().openapi({ description: "Validated by the workflow type's payload schema.", example: { amount: 42, currency: 'EUR' } }),
	})
	.openapi('CreateWorkflow');

export const CreatedSchema = z.object({ id: z.string(), type: z.string(), status: StatusSchema }).openapi('WorkflowCreated');

const epochMs = z.string().regex(/^\d{1,16}$/, 'must be milliseconds since the epoch');

export const ListQuery = z.object({
	type: z.string().max(64).optional().openapi({ description: 'Omit to list every type.' }),
	status: z.string().max(200).optional().openapi({ description: 'One status, or several separated by commas.', example: 'waiting,sleeping' }),
	limit: z.string().regex(/^\d{1,4}$/, 'must be a whole number from 1 to 1000').optional().openapi({ example: '50' }),
	order: z
		.enum(['created', 'updated'])
		.optional()
		.openapi({
			description:
				'created (default): newest created first; a page walk lists every instance that existed when it began exactly once. updated: most recently changed first; instances that change during a walk can be skipped or repeated.',
		}),
	// No length bound here: the cursor's owner refuses anything it did not issue with INVALID_CURSOR.
	cursor: z.string().optional().openapi({ description: 'The nextCursor of the previous page (same filters and order).' }),
	createdAfter: epochMs.optional(),
	createdBefore: epochMs.optional(),
	updatedAfter: epochMs.optional(),
	updatedBefore: epochMs.optional(),
});

export const SummarySchema = z
	.object({ id: z.string(), type: z.string(), status: StatusSchema, createdAt: z.number().int(), updatedAt: z.number().int() })
	.openapi('WorkflowSummary');

export const ListSchema = z.object({ items: z.array(SummarySchema), nextCursor: z.string().nullable() }).openapi('WorkflowList');

export const StepSchema = z
	.object({
		name: z.string(),
		kind: z.enum(['do', 'sleep', 'wait']),
		status: z.string(),
		attempts: z.number().int(),
		startedAt: z.number().int().nullable(),
		finishedAt: z.number().int().nullable(),
		wakeAt: z.number().int().nullable(),
		result: z.unknown().optional(),
		resultOmitted: z.literal(true).optional().openapi({ description: 'The result exists but did not fit the status; page it with GET /workflows/{id}/steps.' }),
		error: z.object({ name: z.string(), message: z.string(), code: z.string().optional(), stack: z.string().optional() }).optional(),
	})
	.openapi('Step');

export const StepsQuery = z.object({
	cursor: z.string().optional().openapi({ description: 'The nextCursor of the previous page.' }),
	limit: z.string().regex(/^\d{1,3}$/, 'must be a whole number from 1 to 100').optional().openapi({ example: '50' }),
});

export const StepPageSchema = z.object({ items: z.array(StepSchema), nextCursor: z.string().nullable() }).openapi('StepPage');

export const DetailSchema = z
	.object({
		id: z.string(),
		type: z.string(),
		status: StatusSchema,
		payload: z.unknown(),
		output: z.unknown().optional(),
		error: z.object({ name: z.string(), message: z.string(), code: z.string().optional(), stack: z.string().optional() }).optional(),
		createdAt: z.number().int(),
		updatedAt: z.number().int(),
		version: z.number().int(),
		stepCounts: z.record(z.string(), z.number().int()).openapi({ description: 'Steps per status, and total.', example: { total: 40, completed: 40 } }),
		stepsBefore: z.number().int().openapi({ description: 'Steps before the window in steps; page them with GET /workflows/{id}/steps.' }),
		steps: z.array(StepSchema).openapi({ description: 'The most recent steps (at most 100), oldest first.' }),
		bufferedEvents: z.number().int().openapi({ description: 'Events buffered for a wait not reached yet.' }),
		droppedEvents: z.number().int().openapi({ description: 'Buffered events nobody consumed, dropped when the instance finished.' }),
	})
	.openapi('WorkflowDetail');

export const ControlSchema = z.object({ id: z.string(), status: StatusSchema }).openapi('ControlResult');

export const EventParams = IdParam.extend({
	name: z.string().min(1).max(256).openapi({ param: { name: 'name', in: 'path' }, example: 'approval' }),
});

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
		message: z.string(),
	})
	.openapi('RebalanceProgress');
