import { ErrorCode, InvalidStateError, PayloadMismatchError, TypeMismatchError, ValidationError } from '../support/errors';
import { assertValidWorkflowId } from '../support/ids';
import { assertJsonDepth, canonicalJson, toStoredJson } from '../support/json';
import type { Registry } from '../definition/registry';
import { validateWith } from '../definition/schema-validation';
import type { WorkflowStatus } from '../support/statuses';
import { checkParentRef, type ParentRef } from '../children/child-workflows';
import { checkTransplant, writeTransplantRows, type ChildTransplant } from '../children/transplant';
import { FINISHED_STATUSES } from '../support/statuses';
import { outcomeOf } from '../children/child-workflows';
import { concurrencyKey, concurrencyOf } from '../limiter/concurrency';
import { applyAttributeUpdate, attributesJson } from '../index/search-attributes';
import type { InstanceRow } from '../storage/store';
import type { InstanceKernel } from './kernel';
import { placeOf, samePlace } from '../support/group-id';
import { assertIdInPlace, placeCreate, type GroupFallback, type Placement } from '../groups/groups';

// Creating an instance: the checks of its input (no storage touched), then its first row.

/** A create whose input passed every check: nothing is stored until `commitCreate`. */
export interface PreparedCreate {
	id: string;
	type: string;
	payloadJson: string | null;
	/** The concurrency key, for a type with `static concurrency`: the instance starts `queued`. */
	concurrencyKey?: string;
	/** The instance that started this one as its child (`step.invoke` / `step.start`). */
	parent?: ParentRef;
	/** The search attributes given at create, checked against the type's declaration (sorted JSON). */
	attributesJson?: string;
	/** A child that ran inline in its parent: what its run left (children/transplant.ts), stored instead of a new row. */
	transplant?: ChildTransplant;
	/** The group it goes to (engine/groups/groups.ts); its id is in that group's place. */
	placement?: Placement;
}

/** Checks a create's id, type, payload (the type's schema) and search attributes without touching storage. */
export async function prepareCreate(
	registry: Registry,
	id: string,
	type: string,
	payloadInput: unknown,
	parentInput?: unknown,
	attributesInput?: unknown,
	transplantInput?: unknown,
	groupInput?: unknown,
	/** The id already holds an instance: a repeated create answers it wherever it lives (one created before its type chose a group). */
	existing = false,
): Promise<PreparedCreate> {
	assertValidWorkflowId(id);
	const entry = registry.get(type);
	const parent = parentInput === undefined ? undefined : checkParentRef(parentInput, id);
	// Only a parent's invoke sends one, with itself as the parent.
	const transplant = transplantInput === undefined || parent === undefined ? undefined : checkTransplant(transplantInput, id);
	const attributes = attributesInput === undefined ? null : attributesJson(applyAttributeUpdate(type, entry.attributes, {}, attributesInput));
	assertJsonDepth(payloadInput, 'payload');
	const payload = await validateWith(entry.workflow.payload, payloadInput, ErrorCode.InvalidPayload, `payload for workflow type "${type}"`);
	const placement = existing ? undefined : placeInGroup(registry, id, type, payload, groupInput, parent);
	const concurrency = concurrencyOf(registry, type);
	const payloadJson = toStoredJson(payload, 'payload');
	return {
		id, type, payloadJson,
		...(placement ? { placement } : {}),
		...(concurrency ? { concurrencyKey: concurrencyKey(type, concurrency, payload) } : {}),
		...(parent ? { parent } : {}),
		...(attributes ? { attributesJson: attributes } : {}),
		...(transplant ? { transplant } : {}),
	};
}

/**
 * The group a create goes to, checked against its id (docs/residency.md): the type's choice,
 * else the group the create asks for or its id names, else the default group. Undefined for a
 * registry without groups and an id without a group part: nothing to check, nothing to say.
 * A child stays in its parent's group (CROSS_GROUP) unless its parent opted in (`parent.crossGroup`,
 * children/cross-group-child.ts).
 */
function placeInGroup(registry: Registry, id: string, type: string, payload: unknown, groupInput: unknown, parent: ParentRef | undefined): Placement | undefined {
	const idPlace = placeOf(id);
	const entry = registry.get(type);
	// A child whose parent did not opt in (allowCrossGroup) lives in its parent's group, whatever id its parent gave it.
	const confined = parent !== undefined && parent.crossGroup !== true;
	if (confined && !samePlace(idPlace, placeOf(parent.id))) throw crossGroup(registry, id, type, parent, `its id names group part "${idPlace.tag ?? '(none: the default group)'}"`);
	// A create of the default group for a type that does not choose: as before groups (its answer unchanged).
	if (idPlace.tag === null && entry.group === undefined && groupInput === undefined) return undefined;
	const requested = groupInput ?? idPlace.group ?? undefined;
	try {
		const placement = placeCreate(registry.groups, type, entry.group, payload, requested as string | undefined);
		assertIdInPlace(id, idPlace, placement, type);
		return placement;
	} catch (error) {
		// A child's id is its parent's, in its parent's group: a type placed elsewhere would be a child in another group.
		if (!confined || (error as { code?: string }).code !== ErrorCode.GroupMismatch) throw error;
		throw crossGroup(registry, id, type, parent, (error as Error).message);
	}
}

/** CROSS_GROUP: a child in another group than its parent's, which did not opt in. */
function crossGroup(registry: Registry, id: string, type: string, parent: ParentRef, why: string): ValidationError {
	return new ValidationError(
		ErrorCode.CrossGroup,
		`child workflow "${id}" of type "${type}" would live in another group than its parent (${placeOf(parent.id).group ?? registry.groups.defaultGroup.name}): a child in another group is refused unless its step passes allowCrossGroup: true (docs/residency.md "Across groups"); ${why}`,
	);
}

export interface CreateResult {
	id: string;
	type: string;
	status: WorkflowStatus;
	created: boolean;
	/** The group it lives in; set when the create chose one (its type, its id or its `group`), docs/residency.md. */
	group?: string;
	/** The group the create chose, when it does not exist or is not deployed: the instance went to the default group. */
	groupFallback?: GroupFallback;
}

/**
 * Stores a created instance: its row and `workflow.created` record (queued for its limiter's
 * slot when its type has `static concurrency`), or, for an id that exists, the existing
 * instance when type and payload match (a 409 otherwise). `queued`: the run waits for a slot.
 */
export function storeCreate(k: InstanceKernel, prepared: PreparedCreate): { result: CreateResult; queued: boolean } {
	const { id, type, payloadJson, concurrencyKey: key, parent, attributesJson: attributes } = prepared;
	assertNotDeleting(k, id);
	// An existing id (or a concurrent create that won while the schema validated).
	if (k.row) {
		if (prepared.transplant) assertOwnTransplant(k.row, prepared.transplant);
		if (parent) assertOwnChild(k.row, parent);
		return { result: inGroup(existingCreate(k, type, payloadJson), prepared), queued: false };
	}
	if (prepared.transplant) return { result: inGroup(storeTransplant(k, prepared, prepared.transplant), prepared), queued: false };
	if (prepared.placement?.fallback) {
		// The seed's rule: a group not (yet) there falls back to the default one, and says so.
		k.host.log?.({ severity: 'warn', event: 'group.fallback', instanceId: id, type, group: prepared.placement.group.name, requestedGroup: prepared.placement.fallback.requested, reason: prepared.placement.fallback.reason });
	}
	const host = k.host;
	const now = host.now();
	const codeVersion = host.registry.get(type).version;
	// A type with a concurrency limit starts queued: it runs once its limiter grants a slot.
	const queued = key !== undefined && host.slots !== undefined && host.limiter !== undefined;
	const status: WorkflowStatus = queued ? 'queued' : 'created';
	const store = () =>
		k.transition(
			{
				id, type, status, payload: payloadJson, output: null, errorName: null, errorMessage: null, errorStack: null, errorCode: null,
				createdAt: now, updatedAt: now, version: 0, generation: 0, codeVersion, lastCodeVersion: codeVersion, parentId: parent?.id ?? null,
				attributes: attributes ?? null,
			},
			{
				kind: 'workflow.created',
				value: payloadJson,
				...(codeVersion !== null || parent ? { detail: { ...(codeVersion !== null ? { codeVersion } : {}), ...(parent ? { parent } : {}) } } : {}),
			},
		);
	// Only a queued create needs a transaction around the transition's own (no savepoint on the common path).
	if (queued) {
		host.store.transaction(() => {
			store();
			k.slot.queue(key, 0, now);
		});
	} else store();
	return { result: inGroup({ id, type, status, created: true }, prepared), queued };
}

/** A create's answer with its group, when the registry declares groups (or the create fell back). */
function inGroup(result: CreateResult, prepared: PreparedCreate): CreateResult {
	const placement = prepared.placement;
	if (!placement) return result;
	return { ...result, group: placement.group.name, ...(placement.fallback ? { groupFallback: placement.fallback } : {}) };
}

/**
 * Stores a child that ran inline in its parent (children/inline-child.ts): its row as the run
 * left it, its steps, wake-ups and history, with its index entry, in one transaction; the child
 * then goes on from there as after an eviction (`created: true`, its status the run's). A
 * finished one sends its parent no notice: the parent sent it, and holds its outcome already.
 */
function storeTransplant(k: InstanceKernel, prepared: PreparedCreate, transplant: ChildTransplant): CreateResult {
	const row: InstanceRow = {
		...transplant.row,
		id: prepared.id, type: prepared.type, payload: prepared.payloadJson, parentId: prepared.parent?.id ?? null, generation: 0, historyBytes: 0, historySeq: 0,
	};
	const finished = FINISHED_STATUSES.includes(row.status);
	if (finished) k.children.parentAskBegan();
	try {
		const store = () =>
			k.host.store.transaction(() => {
				writeTransplantRows(k.host.store, transplant);
				k.transition(row);
			});
		// A finished child's publisher (its parent) delivers its entry before it takes the call as answered, and retries the
		// call until then: the child's object sets no alarm for it (docs/decisions.md "Rows of a `step.invoke` child").
		if (finished) k.outbox.withCallerAsBackstop(store);
		else store();
	} finally {
		if (finished) k.children.parentAskEnded(k.row ? outcomeOf(k.row) : null);
	}
	return { id: row.id, type: row.type, status: row.status, created: true };
}

/**
 * A transplant for an id that exists already is the same publishing again (its answer was lost)
 * when the instance began with that run; else the id is another run's (an earlier incarnation of a
 * parent re-created under the id of a deleted one): refused, so that the parent's run is not taken
 * for that one (docs/writing-workflows.md "Child workflows").
 */
function assertOwnTransplant(row: InstanceRow, transplant: ChildTransplant): void {
	if (row.createdAt === transplant.row.createdAt && row.parentId === transplant.row.parentId) return;
	throw new InvalidStateError(
		`workflow id "${row.id}" is taken by an instance created ${new Date(row.createdAt).toISOString()}, before this run of its parent's step: a parent re-created under a deleted one's id meets its children; give its children their own ids (step.invoke's id) or turn inline children off for the type (static inline = false)`,
	);
}

/**
 * A parent's create of an id that exists answers the instance only when that parent created it (its
 * step again, after a lost answer or a restart). An instance created by anyone else (a call from
 * outside, another parent) is not this parent's child: answering it would hand the parent its output
 * and tie it to the parent's terminate, in another group too with allowCrossGroup (found from outside).
 */
function assertOwnChild(row: InstanceRow, parent: ParentRef): void {
	if (row.parentId === parent.id) return;
	throw new InvalidStateError(
		`workflow id "${row.id}" is taken by an instance not created by this parent (${row.parentId === null ? 'it was created from outside' : `its parent is "${row.parentId}"`}): a child needs an id of its own; give the step "${parent.step}" another id, or leave the id out`,
	);
}

/** A create of an existing id: the same type and payload get the instance, anything else a 409. */
function existingCreate(k: InstanceKernel, type: string, payloadJson: string | null): CreateResult {
	const row = assertSameType(k, type);
	// Compared as canonical JSON after the schema, so key order and defaults do not matter.
	if (canonicalJson(row.payload) !== canonicalJson(payloadJson)) {
		throw new PayloadMismatchError(
			`workflow id "${row.id}" already exists with another payload; re-sending the same payload returns the existing instance, a new payload needs a new id`,
		);
	}
	return { id: row.id, type: row.type, status: row.status, created: false };
}

/** The existing row, when it is of `type`; TYPE_MISMATCH otherwise. */
export function assertSameType(k: InstanceKernel, type: string): InstanceRow {
	const row = k.row!;
	if (row.type !== type) {
		throw new TypeMismatchError(`workflow id "${row.id}" already belongs to a workflow of type "${row.type}", not "${type}"`);
	}
	return row;
}

/** A create of an id whose deletion is under way is refused until the storage is gone. */
export function assertNotDeleting(k: InstanceKernel, id: string): void {
	if (k.deletion.pending || k.gone) {
		throw new InvalidStateError(`workflow id "${id}" is being deleted; create it again once the deletion has finished`);
	}
}
