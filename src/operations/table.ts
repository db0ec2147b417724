import { assertValidIdempotencyKey } from '../engine/support/ids';
import { routeCreate } from './create-placement';
import { assertJsonDepth } from '../engine/support/json';
import type { IndexEntry } from '../engine/index/index-entry';
import { archivedHistoryPage } from '../engine/lifecycle/archive-reader';
import type { ChildOutcome, ParentRef } from '../engine/children/child-workflows';
import type { ChildTransplant } from '../engine/children/transplant';
import type { InlineRead } from '../engine/instance/inline-child';
import type { DeleteFilter, DeleteResult } from '../engine/lifecycle/deletion';
import type { HistoryPage } from '../engine/history/history';
import type { CreateResult } from '../engine/instance/create';
import type { RestartOptions } from '../engine/instance/controls';
import type { InstanceEngine } from '../engine/instance/instance-engine';
import type { StepPage, WorkflowStatusInfo } from '../engine/definition/types';
import { FINISHED_STATUSES, type WorkflowStatus } from '../engine/support/statuses';
import type { WebhookTarget } from '../engine/webhooks/webhook';
import type { GrantAnswer } from '../engine/limiter/concurrency-slot';
import { operation } from './operation';
import type { BulkAction } from '../engine/bulk/bulk-job';
import { ErrorCode, NotFoundError, ValidationError } from '../engine/support/errors';
import { isScheduledInstanceId } from '../engine/schedule/schedule-name';
import { isReservedChildId } from '../engine/children/child-workflows';

/** What a create sends (see `create`); `parent` is set only by a parent's step.invoke / step.start (the HTTP route never sets it). */
interface CreateInput {
	id?: string;
	type: string;
	payload?: unknown;
	parent?: ParentRef;
	scheduledTick?: true;
	attributes?: Record<string, unknown>;
	/** The group to create it in, for a type that does not choose its own (docs/residency.md). */
	group?: string;
}

/** A create's checks on the caller's side: reserved ids (schedule ticks, children), the payload's depth; the id made up if absent. */
function prepareCreateInput(input: CreateInput) {
	// Without an id, one in the type's group when this isolate knows the registry (create-placement.ts).
	const { id, locationHint } = input.id === undefined ? routeCreate(input) : { id: input.id, ...hintFor(input) };
	// Only the type's schedule object creates tick ids (engine/schedule/schedule-name.ts).
	if (typeof id === 'string' && input.scheduledTick !== true && isScheduledInstanceId(id)) {
		throw new ValidationError(ErrorCode.ReservedId, `workflow id "${id}" is reserved: ids of the form <type>:sched:<tick> belong to schedule ticks`);
	}
	// Only a parent's step creates ids with `::` (engine/children/child-workflows.ts).
	if (typeof id === 'string' && input.parent === undefined && isReservedChildId(id)) {
		throw new ValidationError(ErrorCode.ReservedId, `workflow id "${id}" is reserved: ids containing "::" belong to child workflows, created by their parent's step`);
	}
	assertJsonDepth(input.payload, 'payload');
	return {
		id, type: input.type, payload: input.payload,
		...(input.group !== undefined ? { group: input.group } : {}),
		...(locationHint !== undefined ? { locationHint } : {}),
		...(input.parent !== undefined ? { parent: input.parent } : {}),
		// A Date (a datetime attribute) crosses RPC as is; the instance checks every value against the declaration.
		...(input.attributes !== undefined ? { attributes: input.attributes } : {}),
	};
}

/** The location hint of a create with a given id, if the id is in its type's group (create-placement.ts). */
function hintFor(input: CreateInput): { locationHint?: string } {
	const { locationHint } = routeCreate(input);
	return locationHint !== undefined ? { locationHint } : {};
}

/** A pause, resume, terminate or restart: no input but the id, the new status out. */
function control(action: 'pause' | 'resume' | 'restart', run: (engine: InstanceEngine) => WorkflowStatus) {
	return operation({
		rpc: action,
		helper: (_type: string, id: string) => ({ id }),
		run: async (instance, _input: { id: string }): Promise<WorkflowStatus> => run(await instance.published()),
	});
}

/**
 * Every control operation of a workflow instance, declared once: its RPC
 * method, its static helper and the engine code it runs. A new operation is
 * one entry here plus its engine code (and its route in `./http.ts`, if it has
 * one); the Durable Object, the instance client (`instances`),
 * `Workflow.<helper>` and the REST API follow. The HTTP binding lives apart so
 * that callers (`shardflow/client`, `Workflow.<helper>`) bundle no zod.
 * Helpers whose types depend on the workflow class (payload, events, output)
 * are refined in `src/workflow.ts` (`TypedHelpers`); the others are typed from
 * their entry. Routes are registered in this order.
 */
export const operations = {
	create: operation({
		rpc: 'create',
		helper: (type: string, options: { id?: string; payload?: unknown; attributes?: Record<string, unknown>; group?: string }) => ({
			type,
			...(options.id !== undefined ? { id: options.id } : {}),
			...(options.group !== undefined ? { group: options.group } : {}),
			payload: options.payload,
			...(options.attributes !== undefined ? { attributes: options.attributes } : {}),
		}),
		prepare: prepareCreateInput,
		run: (instance, input): Promise<CreateResult> => instance.create(input as { id: string; type: string; payload: unknown; parent?: ParentRef; attributes?: unknown; group?: string }),
	}),

	// The reads of an instance: from its object, else (a child its parent ran inline and has not published yet) from its
	// parent, else from its archive (see InstanceAccess.orArchived).
	status: operation({
		rpc: 'describe',
		helper: (_type: string, id: string) => ({ id }),
		run: (instance, _input: { id: string }): Promise<WorkflowStatusInfo> =>
			instance.orArchived(
				(engine) => engine.status(),
				(archived) => ({ ...archived.status, archived: true }),
				{ kind: 'status' },
			),
	}),

	steps: operation({
		rpc: 'steps',
		helper: (_type: string, id: string, options: { cursor?: string | null; limit?: number } = {}) => ({ id, ...options }),
		run: (instance, input: { id: string; cursor?: string | null; limit?: number }): Promise<StepPage> => {
			const query = { cursor: input?.cursor ?? null, ...(input?.limit !== undefined ? { limit: input.limit } : {}) };
			return instance.orArchived(
				(engine) => engine.steps(query),
				() => {
					throw new NotFoundError('no such workflow instance');
				},
				{ kind: 'steps', ...query },
			);
		},
	}),

	history: operation({
		rpc: 'history',
		helper: (_type: string, id: string, options: { after?: string | null; limit?: number; generation?: number } = {}) => ({ id, ...options }),
		run: (instance, input: { id: string; after?: string | null; limit?: number; generation?: number }): Promise<HistoryPage> => {
			const { id: _id, ...query } = input;
			return instance.orArchived(
				(engine) => engine.history(query),
				(archived) => archivedHistoryPage(archived, query),
				{ kind: 'history', ...query },
			);
		},
	}),

	/** A parent publishes a child it runs (or ran) inline now, for an event or a control sent to the child (see `InstanceAccess.published`). */
	publishInlineChild: operation({
		rpc: 'publishInlineChild',
		run: (instance, input: { id: string; childId: string }): Promise<boolean> => instance.existing().publishInlineChild(input?.childId),
	}),

	/** A parent's answer to a read of a child it runs (or ran) inline and has not published yet (see `status`). */
	inlineChildView: operation({
		rpc: 'inlineChildView',
		run: (instance, input: { id: string; childId: string; read: InlineRead }): unknown => instance.existing().inlineChild(input?.childId, input?.read),
	}),

	pause: control('pause', (engine) => engine.pause()),
	resume: control('resume', (engine) => engine.resume()),
	/** Ends an instance; with `rollback`, the rollbacks of its completed steps run first (status `rolling_back`). */
	terminate: operation({
		rpc: 'terminate',
		helper: (_type: string, id: string, options: { rollback?: boolean } = {}) => ({ id, ...options }),
		run: async (instance, input: { id: string; rollback?: boolean }): Promise<WorkflowStatus> => (await instance.published()).terminate({ rollback: input?.rollback === true }),
	}),
	/**
	 * Reruns a completed, errored, terminated or diverged instance in a new generation: from
	 * the start, or with `from` from that step (the completed steps recorded before it keep
	 * their results). An unknown step is refused (`UNKNOWN_STEP`) and changes nothing.
	 */
	restart: operation({
		rpc: 'restart',
		helper: (_type: string, id: string, options: RestartOptions = {}) => ({ id, ...(options.from !== undefined ? { from: options.from } : {}) }),
		run: async (instance, input: { id: string } & RestartOptions): Promise<WorkflowStatus> =>
			(await instance.published()).restart(input?.from === undefined ? {} : { from: input.from }),
	}),

	sendEvent: operation({
		rpc: 'sendEvent',
		helper: (_type: string, options: { id: string; event: string; payload: unknown; idempotencyKey?: string }) => options,
		prepare: (input: { id: string; event: string; payload: unknown; idempotencyKey?: string }) => {
			if (input.idempotencyKey !== undefined) assertValidIdempotencyKey(input.idempotencyKey);
			assertJsonDepth(input.payload, `payload of event "${input.event}"`);
			return input;
		},
		run: async (instance, input): Promise<null> => {
			const key = input?.idempotencyKey;
			await (await instance.published()).sendEvent(input?.event, input?.payload, key === undefined ? {} : { idempotencyKey: key });
			return null;
		},
	}),

	/**
	 * Deletes an instance: its storage, alarm and index entry (archived first
	 * with `archive`); a running one only with `terminate`. An id whose storage
	 * is gone but which has archived records has those erased.
	 */
	delete: operation({
		rpc: 'deleteInstance',
		helper: (_type: string, id: string, options: { terminate?: boolean; archive?: boolean } = {}) => ({ id, ...options }),
		// `only` and `reason` come from a purge (src/client/purge.ts); the HTTP route never sets them.
		run: (instance, input: { id: string; terminate?: boolean; archive?: boolean; only?: DeleteFilter; reason?: 'delete' | 'purge' | 'retention' }): Promise<DeleteResult> =>
			instance.delete(input),
	}),

	/** From the instance's limiter: a slot is free for this queued instance, which starts; `declined` if it no longer waits (the slot passes on). */
	slotGranted: operation({
		rpc: 'slotGranted',
		run: (instance, _input: { id: string }): GrantAnswer => instance.existing().slotGranted(),
	}),

	/**
	 * The one POST a webhook (`step.webhook`) accepts. Served by `POST /webhooks/{token}`
	 * (src/api/webhook-route.ts), which checks the token's signature first and so
	 * passes a target it trusts; namespace holders are trusted like for sendEvent.
	 */
	completeWebhook: operation({
		rpc: 'completeWebhook',
		// `bodyText`: the POST as it came, parsed by the instance after it checked the URL (so a used or expired URL says so whatever the body).
		run: (instance, input: { id: string; target: WebhookTarget; body?: unknown; bodyText?: string }): null => {
			instance.existing().completeWebhook(input.target, input.body, input.bodyText);
			return null;
		},
	}),

	/**
	 * A parent's `step.invoke` / `step.start` creates its child (a `create` with `parent`). With
	 * `waitMs` (an invoke), the same call then answers the child's outcome as `childOutcome` does:
	 * a short child answers its parent within the create's round trip, and sends no notice.
	 */
	startChild: operation({
		rpc: 'startChild',
		prepare: (input: CreateInput & { id: string; payload: unknown; parent: ParentRef; waitMs?: number }) => ({
			...prepareCreateInput(input),
			id: input.id,
			parent: input.parent,
			...(input.waitMs !== undefined ? { waitMs: input.waitMs } : {}),
		}),
		run: async (instance, input): Promise<ChildOutcome | null> => {
			await instance.create(input);
			return instance.existing().childOutcome(input.waitMs, input.parent?.id);
		},
	}),

	/**
	 * `startChild` of a child that ran inline in its parent (engine/instance/inline-child.ts): a new
	 * child holds what that run left (engine/children/transplant.ts) instead of starting afresh. Its
	 * own RPC method, so that during a gradual deploy a parent never hands a child to an object of
	 * an older build, which would run it again from the start: there the call fails, and the parent
	 * retries it until the child's object runs this build.
	 */
	transplantChild: operation({
		rpc: 'transplantChild',
		prepare: (input: CreateInput & { id: string; payload: unknown; parent: ParentRef; waitMs?: number; transplant: ChildTransplant }) => ({
			...prepareCreateInput(input),
			id: input.id,
			parent: input.parent,
			...(input.waitMs !== undefined ? { waitMs: input.waitMs } : {}),
			transplant: input.transplant,
		}),
		run: async (instance, input): Promise<ChildOutcome | null> => {
			if (input.transplant === undefined) throw new ValidationError(ErrorCode.InvalidOptions, 'transplantChild needs a transplant');
			await instance.create(input);
			const child = instance.existing();
			const outcome = await child.childOutcome(input.waitMs, input.parent?.id);
			// A finished child's object arms no alarm for its index entry (create.ts `storeTransplant`): it is delivered
			// before the parent, which retries this call until answered, takes the child as published. Again on a repeated
			// call: the entry of a first call whose object died before delivering it is still pending.
			if (outcome && FINISHED_STATUSES.includes(input.transplant.row.status)) await child.deliverIndexNow();
			return outcome;
		},
	}),

	/**
	 * For a parent's `step.invoke`: the child's outcome once it has finished, else null. A read that writes nothing.
	 * With `waitMs`, a child whose run is under way answers when it has nothing left to run, or after `waitMs` at most.
	 */
	childOutcome: operation({
		rpc: 'childOutcome',
		run: (instance, input: { id: string; waitMs?: number }): Promise<ChildOutcome | null> => instance.existing().childOutcome(input?.waitMs),
	}),

	/** A child of this instance finished: a waiting `step.invoke` asks it for its outcome now. */
	childFinished: operation({
		rpc: 'childFinished',
		run: (instance, input: { id: string; childId: string; outcome?: ChildOutcome }): null => {
			instance.existing().childFinished(input?.childId, input?.outcome);
			return null;
		},
	}),

	// A bulk job's action, once per job, and its receipt (engine/instance/bulk-receipt.ts).
	bulkAct: operation({
		rpc: 'bulkAct',
		run: (instance, input: { id: string; job: string; action: BulkAction }): Promise<'applied' | 'already'> => instance.bulkAct(input),
	}),
	bulkReceipt: operation({
		rpc: 'bulkReceipt',
		run: (instance, input: { id: string; job: string; action: BulkAction }): boolean => instance.existing().bulkReceipt(input?.job, input?.action),
	}),

	/** For reconcile: a read that writes nothing. */
	currentIndexEntry: operation({
		rpc: 'currentIndexEntry',
		run: (instance, _input: { id: string }): IndexEntry | null => instance.currentIndexEntry(),
	}),

	/** Puts the instance's current entry in its outbox again and delivers it (the repair for an entry a shard lost). */
	reindex: operation({
		rpc: 'republishIndex',
		run: (instance, _input: { id: string }): Promise<{ entry: IndexEntry; delivered: boolean }> => instance.existing().republishIndex(),
	}),
};

export type Operations = typeof operations;
export type OperationName = keyof Operations;
export type InputOf<K extends OperationName> = Operations[K] extends { run(instance: any, input: infer I): any } ? I : never;
export type OutputOf<K extends OperationName> = Operations[K] extends { run(...args: any): infer O } ? Awaited<O> : never;
