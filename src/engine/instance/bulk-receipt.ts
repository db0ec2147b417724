import { bulkEventKey, checkBulkAction, type BulkAction } from '../bulk/bulk-job';
import { ErrorCode, ValidationError } from '../support/errors';
import { MAX_EVENT_KEYS } from '../support/limits';
import { pause, restart, resume, terminate } from './controls';
import type { InstanceEngine } from './instance-engine';
import type { InstanceKernel } from './kernel';
import { sendEvent } from './send-event';

/**
 * A bulk job's action applied to one instance exactly once, and the instance's receipt of it:
 * what lets a job that crashed between an action and its own record KNOW whether the action
 * arrived, instead of guessing from the instance's version (which a sleep, a retry or a status
 * change of the run itself moves too).
 *
 * The receipt is a key in the instance's idempotency keys (the `event_keys` table, bounded to
 * the `MAX_EVENT_KEYS` most recent), written in the same transaction as the action's effect:
 * either both are stored or neither. For `sendEvent` the event's own idempotency key is the
 * receipt (the send already records it); for the other actions the key is `bulk <job id>`,
 * whose space no caller's key may hold (event-keys.ts), so no event send can take or fake it.
 * A deleted instance keeps nothing: `delete` has no receipt (the job reads "gone" as its effect).
 */

const JOB_ID = /^[\x21-\x7e]{1,200}$/;

/** The key an instance records when job `jobId` applies `action` to it. */
export function bulkReceiptKey(jobId: string, action: BulkAction): string {
	return action.kind === 'sendEvent' ? bulkEventKey(jobId, action) : `bulk ${jobId}`;
}

/** Checks what a caller sent (RPC input is never trusted): the job's id and its action. */
export function checkBulkCall(jobId: unknown, actionInput: unknown): { jobId: string; action: BulkAction } {
	if (typeof jobId !== 'string' || !JOB_ID.test(jobId)) throw new ValidationError(ErrorCode.InvalidRequest, 'a bulk action needs the id of its job');
	return { jobId, action: checkBulkAction(actionInput) };
}

/** Whether job `jobId`'s action reached this instance (its receipt is stored). Reads only. */
export function hasBulkReceipt(k: InstanceKernel, jobId: string, action: BulkAction): boolean {
	k.require();
	return k.host.store.readEventKey(bulkReceiptKey(jobId, action)) !== undefined;
}

/**
 * Applies job `jobId`'s action unless its receipt is stored already, and stores the receipt with
 * the action's effect. `already`: an earlier call of the same job applied it (a job resumed after
 * a crash asks again), and nothing changes. The instance's typed errors (INVALID_STATE, ...)
 * pass through, and then no receipt is written. Not for `delete` (no receipt survives it).
 */
export async function applyBulkAction(k: InstanceKernel, jobId: string, action: BulkAction): Promise<'applied' | 'already'> {
	const key = bulkReceiptKey(jobId, action);
	if (action.kind === 'delete') throw new ValidationError(ErrorCode.InvalidRequest, 'a bulk delete is an instance delete: it leaves no receipt');
	if (action.kind === 'sendEvent') {
		// The event's idempotency key is the receipt: a send already accepted under it is answered, not buffered again.
		const seen = hasBulkReceipt(k, jobId, action);
		await sendEvent(k, action.event, action.payload, { idempotencyKey: key });
		return seen ? 'already' : 'applied';
	}
	if (hasBulkReceipt(k, jobId, action)) return 'already';
	const store = k.host.store;
	if (action.kind === 'reindex') {
		const row = k.require();
		// The receipt and the outbox row are written before the first await: one implicit transaction.
		store.writeEventKey({ key, name: 'bulk.reindex', digest: '' }, k.host.now(), MAX_EVENT_KEYS);
		await k.outbox.republish(row);
		return 'applied';
	}
	// The receipt first, then the action: an action that refuses (INVALID_STATE) throws before it
	// writes, and the transaction takes the receipt back with it.
	store.transaction(() => {
		store.writeEventKey({ key, name: `bulk.${action.kind}`, digest: '' }, k.host.now(), MAX_EVENT_KEYS);
		switch (action.kind) {
			case 'terminate':
				return terminate(k, action.rollback ? { rollback: true } : {});
			case 'pause':
				return pause(k);
			case 'resume':
				return resume(k);
			case 'restart':
				return restart(k, action.from === undefined ? {} : { from: action.from });
		}
	});
	return 'applied';
}

/**
 * The `bulkAct` operation on an instance's object, whatever hosts it (the Durable Object, the Node
 * kit): the action checked like the job's own request, so a delete takes `archive` and `terminate`
 * and nothing else (no purge's `only`); a delete is the object's delete, which leaves no receipt,
 * and the other actions are applied with the job's receipt. Outside the operation table, so that
 * the callers' bundle (shardflow/client) carries none of it.
 */
export async function bulkActOn(object: { delete(input: unknown): Promise<unknown>; published(): Promise<InstanceEngine> }, input: unknown): Promise<'applied' | 'already'> {
	const { id, job, action: given } = (input ?? {}) as { id?: unknown; job?: unknown; action?: unknown };
	const action = checkBulkAction(given);
	if (action.kind === 'delete') {
		await object.delete({ id, ...(action.archive !== undefined ? { archive: action.archive } : {}), ...(action.terminate ? { terminate: true } : {}) });
		return 'applied';
	}
	return (await object.published()).applyBulkAction(job, action);
}
