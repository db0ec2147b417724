import { CHILD_ID_SEPARATOR, checkChildRequest, childIdFor, type ChildRef } from './child-workflows';
import type { ChildClass, ChildOptions } from '../definition/child-options';
import { ErrorCode, ValidationError } from '../support/errors';
import { inPlace, placeOf, samePlace, splitGroupTag, type GroupPlace } from '../support/group-id';

/**
 * The default id of a child in another group than its parent's (`step.invoke` / `step.start`
 * with `allowCrossGroup: true`, docs/residency.md "Across groups"):
 *
 *   `<child's tag>~.::<parent's tag, or - for the default group>::<parent's id without its tag>::<step>`
 *
 * (`eu.eu~.::-::order-1::charge` for a default-group parent `order-1`; `.::eu.eu::order-1::charge`
 * for an eu parent's child in the default group), `::g<n>::` after a restart and hashed when too
 * long, as `childIdFor`. It lives in the child's group, so it routes to the child's jurisdiction,
 * and it is a function of the parent's id, generation and step only, so a replay finds the same child.
 * Why the `.::` and the parent's tag: two parents with the same local id in different groups
 * (`order-1`, `eu.eu~order-1`) get different children; a root id is never `.` (ids.ts refuses
 * a dots-only id) and tags never contain `:` or are `-`, so no ordinary child's id, all of which
 * start with a root id, takes this form.
 */
export function crossGroupChildId(childPlace: GroupPlace, parentId: string, generation: number, step: string): string {
	const { place, rest } = splitGroupTag(parentId);
	const from = `${CROSS_GROUP_MARK}${place.tag ?? '-'}${CHILD_ID_SEPARATOR}${rest}`;
	return inPlace(childPlace, childIdFor(from, generation, step));
}

/** What the local part of a cross-group child's default id starts with. */
export const CROSS_GROUP_MARK = `.${CHILD_ID_SEPARATOR}`;

/** The parent's side of a child's groups: where a type's child would live (its type's group, pinned or chosen from the payload). */
export interface ChildPlacing {
	parentId: string;
	generation: number;
	assertRegistered(type: string): void;
	/** The place a child of `type` with `payload` is created in; absent: a registry without groups (every child in its parent's group). */
	placeChild?(type: string, payload: unknown): GroupPlace;
}

/**
 * `checkChildRequest`, and for `allowCrossGroup: true` a child whose type lives in another group
 * than its parent: its default id is in that group (`crossGroupChildId`) and its ref says
 * `crossGroup`, so it never runs inline and its create carries the opt-in. A child of the
 * parent's own group is as without the option. An explicit `id` is the caller's: it must name
 * the child's group (its create checks it), and it is cross-group when that is not the parent's.
 */
export function checkChildPlacement(children: ChildPlacing, mode: ChildRef['mode'], name: string, Child: ChildClass, options: ChildOptions<unknown>): ChildRef {
	const cross = options?.allowCrossGroup;
	if (cross !== undefined && typeof cross !== 'boolean') {
		throw new ValidationError(ErrorCode.InvalidOptions, `step.${mode}("${name}"): allowCrossGroup must be a boolean, got ${JSON.stringify(cross)}`);
	}
	if (cross !== true) return checkChildRequest(children, mode, name, Child, options);
	const type = (Child as { type?: unknown } | undefined)?.type;
	if (typeof type !== 'string' || !children.placeChild) return checkChildRequest(children, mode, name, Child, options);
	children.assertRegistered(type);
	const parentPlace = placeOf(children.parentId);
	const id = options.id ?? crossGroupId(children, parentPlace, type, options.payload, name);
	const ref = checkChildRequest(children, mode, name, Child, id === undefined ? options : { ...options, id });
	return samePlace(placeOf(ref.childId), parentPlace) ? ref : { ...ref, crossGroup: true };
}

/** The cross-group default id of a child whose type lives elsewhere; undefined when it lives in the parent's group. */
function crossGroupId(children: ChildPlacing, parentPlace: GroupPlace, type: string, payload: unknown, name: string): string | undefined {
	const childPlace = children.placeChild!(type, payload);
	return samePlace(childPlace, parentPlace) ? undefined : crossGroupChildId(childPlace, children.parentId, children.generation, name);
}
