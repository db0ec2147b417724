import { z } from 'zod';
import { RESTART_FROM_TYPES } from '../engine/support/step-kinds';
import { WORKFLOW_STATUSES } from '../engine/support/statuses';

/**
 * Schemas of the control operations' HTTP requests and responses. They
 * validate requests and generate /openapi.json, so the document cannot drift
 * from the code. Plain zod with `.meta()` (which the OpenAPI generator reads:
 * `id` names a component, the rest is OpenAPI metadata), not
 * `@hono/zod-openapi`'s `.openapi()`, so they need no Hono. Only the HTTP
 * bindings (`./http.ts`, host side) import them: the operation table, which
 * callers and workflow files import, carries no zod.
 */

export const ErrorSchema = z
	.object({ error: z.object({ code: z.string().meta({ example: 'INVALID_PAYLOAD' }), message: z.string() }) })
	.meta({ id: 'Error' });

export const StatusSchema = z.enum(WORKFLOW_STATUSES).meta({ id: 'WorkflowStatus' });

export const IdParam = z.object({
	id: z.string().min(1).max(1000).meta({ param: { name: 'id', in: 'path' }, example: 'payment-123' }),
});

export const CreateBody = z
	.object({
		type: z.string().min(1).max(64).meta({ example: 'payment' }),
		id: z.string().optional().meta({ description: '1-100 characters of A-Z a-z 0-9 _ . : -, not only dots, not starting with "__"; in a group other than the default, prefixed with the group part "<group>~" or "<group>.<jurisdiction>~" (docs/residency.md). Omit for a UUIDv7 (in the type\'s group).', example: 'payment-123' }),
		group: z.string().optional().meta({ description: 'The group to create it in, for a type that does not choose its own (docs/residency.md); an undeclared group, or an undeployed one without a jurisdiction, falls back to the default group (groupFallback says so); an undeployed one with a jurisdiction is refused (503 GROUP_NOT_DEPLOYED) unless declared with fallback: true.', example: 'eu' }),
		payload: z.unknown().optional().meta({ description: "Validated by the workflow type's payload schema.", example: { amount: 42, currency: 'EUR' } }),
		attributes: z
			.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()]))
			.optional()
			.meta({ description: "Search attributes the type declares (static attributes), each a value of its kind (a datetime as ms since the epoch); checked against the declaration (400 INVALID_SEARCH_ATTRIBUTES).", example: { customerId: '42', amount: 120 } }),
	})
	.meta({ id: 'CreateWorkflow' });

export const RestartBody = z
	.object({
		from: z
			.union([
				z.string().min(1).max(256),
				z
					.object({
						name: z.string().min(1).max(256),
						type: z.enum(RESTART_FROM_TYPES).optional().meta({ description: 'The kind of step, by the call that recorded it (sleep covers sleepUntil, invoke covers start). Omit: the do step of that name if there is one, else the step of any kind.' }),
						count: z.number().int().min(1).optional().meta({ description: "Which occurrence of the name: 1 (step names are unique per kind within a run; Cloudflare's form)." }),
					})
					.strict(),
			])
			.optional()
			.meta({
				description:
					'Run again from this step: the completed steps recorded before it keep their results; it and every later step run anew. A name (the do step of that name if there is one, else the step of any kind), or {name, type?, count?}. Omit to restart from the start.',
				example: 'charge-card',
			}),
	})
	.strict()
	.meta({ id: 'RestartWorkflow' });

export const CreatedSchema = z
	.object({
		id: z.string(),
		type: z.string(),
		status: StatusSchema,
		group: z.string().optional().meta({ description: 'The group it lives in, when the create chose one (its type, its id or its group).' }),
		groupFallback: z
			.object({ requested: z.string(), reason: z.enum(['unknown', 'undeployed']) })
			.optional()
			.meta({ description: 'Set when the group chosen is not declared, or not deployed and allowed to fall back: the instance went to the default group.' }),
	})
	.meta({ id: 'WorkflowCreated' });

const ErrorDescription = z.object({ name: z.string(), message: z.string(), code: z.string().optional(), stack: z.string().optional() });

export const StepSchema = z
	.object({
		name: z.string(),
		kind: z.enum(['do', 'sleep', 'wait', 'patch', 'rollback', 'webhook', 'child']).meta({ description: 'rollback: the rollback of the do step of the same name; webhook: step.webhook; child: step.invoke / step.start.' }),
		status: z.string(),
		attempts: z.number().int(),
		startedAt: z.number().int().nullable(),
		finishedAt: z.number().int().nullable(),
		wakeAt: z.number().int().nullable(),
		result: z.unknown().optional(),
		resultOmitted: z.literal(true).optional().meta({ description: 'The result exists but did not fit the status; page it with GET /workflows/{id}/steps.' }),
		error: ErrorDescription.optional(),
	})
	.meta({ id: 'Step' });

export const StepsQuery = z.object({
	cursor: z.string().optional().meta({ description: 'The nextCursor of the previous page.' }),
	limit: z.string().regex(/^\d{1,3}$/, 'must be a whole number from 1 to 100').optional().meta({ example: '50' }),
});

export const StepPageSchema = z.object({ items: z.array(StepSchema), nextCursor: z.string().nullable() }).meta({ id: 'StepPage' });

export const DetailSchema = z
	.object({
		id: z.string(),
		type: z.string(),
		status: StatusSchema,
		payload: z.unknown(),
		output: z.unknown().optional(),
		error: ErrorDescription.optional(),
		createdAt: z.number().int(),
		updatedAt: z.number().int(),
		version: z.number().int(),
		generation: z.number().int().meta({ description: 'The current run: 0, then one more per restart (the history route reads it by default).' }),
		codeVersion: z.string().optional().meta({ description: "The registry's code version of the type when the instance was created." }),
		lastCodeVersion: z.string().optional().meta({ description: 'The code version of the last pass that ran the instance.' }),
		parentId: z.string().optional().meta({ description: 'The instance whose step.invoke or step.start started this one (a child workflow).' }),
		attributes: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional().meta({ description: 'The search attributes set (a datetime as ms since the epoch).' }),
		stepCounts: z.record(z.string(), z.number().int()).meta({ description: 'Steps per status, and total.', example: { total: 40, completed: 40 } }),
		stepsBefore: z.number().int().meta({ description: 'Steps before the window in steps; page them with GET /workflows/{id}/steps.' }),
		steps: z.array(StepSchema).meta({ description: 'The most recent steps (at most 100), oldest first.' }),
		bufferedEvents: z.number().int().meta({ description: 'Events buffered for a wait not reached yet.' }),
		droppedEvents: z.number().int().meta({ description: 'Buffered events nobody consumed, dropped when the instance finished.' }),
		archived: z.literal(true).optional().meta({ description: 'The instance was deleted; this is its archived record.' }),
		rollback: z
			.object({
				reason: z.enum(['failed', 'terminated']),
				state: z.enum(['running', 'completed', 'failed', 'abandoned']),
				completed: z.number().int(),
				failedStep: z.string().optional(),
				error: ErrorDescription.optional(),
			})
			.optional()
			.meta({ description: 'Present once rollbacks began: why, how far, and which one failed for good (docs/writing-workflows.md "Rollbacks").' }),
		webhooks: z
			.array(z.object({ step: z.string(), url: z.string(), expiresAt: z.number().int().nullable() }))
			.optional()
			.meta({ description: 'Webhooks (step.webhook) waiting for their one POST, with their URLs.' }),
	})
	.meta({ id: 'WorkflowDetail' });

export const ControlSchema = z.object({ id: z.string(), status: StatusSchema }).meta({ id: 'ControlResult' });

export const EventParams = IdParam.extend({
	name: z.string().min(1).max(256).meta({ param: { name: 'name', in: 'path' }, example: 'approval' }),
});

export const EventHeaders = z.object({
	'idempotency-key': z.string().optional().meta({
		description: 'Makes retries safe: a key is accepted once per instance and a retry gets the same 202; the same key with another event or payload is 422.',
		example: 'approval-7f3c',
	}),
});

export const EventPayload = z.unknown().meta({ id: 'EventPayload' });

export const AcceptedSchema = z.object({ id: z.string(), event: z.string(), accepted: z.literal(true) });

export const ReindexSchema = z
	.object({ id: z.string(), type: z.string(), version: z.number().int(), delivered: z.boolean() })
	.meta({ id: 'ReindexResult' });

export const HistoryQuery = z.object({
	after: z.string().optional().meta({ description: "The nextCursor of the previous page: the seq of the last record seen." }),
	limit: z.string().regex(/^\d{1,4}$/, 'must be a whole number from 1 to 1000').optional().meta({ example: '100' }),
	generation: z.string().regex(/^\d{1,9}$/, 'must be a whole number').optional().meta({ description: 'Which run: 0 for the first, the current one by default.' }),
});

export const HistoryEventSchema = z
	.object({
		seq: z.number().int(),
		at: z.number().int(),
		kind: z.string().meta({ example: 'step.completed' }),
		generation: z.number().int(),
		step: z.string().optional(),
		attempt: z.number().int().optional(),
	})
	.catchall(z.unknown())
	.meta({ id: 'HistoryEvent', description: 'One history record; the fields of each kind are in docs/history-format.md.' });

export const HistoryPageSchema = z
	.object({
		id: z.string(),
		type: z.string(),
		generation: z.number().int(),
		formatVersion: z.number().int(),
		events: z.array(HistoryEventSchema),
		nextCursor: z.string().nullable(),
		archived: z.literal(true).optional().meta({ description: 'The instance was deleted; this page is read from its archived record.' }),
	})
	.meta({ id: 'HistoryPage' });

const flag = z.enum(['true', 'false']);

export const TerminateQuery = z.object({
	rollback: flag.optional().meta({ description: 'true: run the rollbacks of the completed steps first (status rolling_back, then terminated).' }),
});

export const DeleteQuery = z.object({
	terminate: flag.optional().meta({ description: 'true: terminate an instance that has not finished, then delete it (otherwise 409).' }),
	archive: flag.optional().meta({ description: 'true: write the instance to the archive bucket first (400 ARCHIVE_NOT_CONFIGURED without one).' }),
});

export const DeletedSchema = z.object({ id: z.string(), deleted: z.literal(true) }).meta({ id: 'WorkflowDeleted' });
