import { ErrorCode, ValidationError, WebhookExpiredError, WebhookNotFoundError, WebhookUsedError } from '../support/errors';
import { historyRow } from '../history/history';
import { assertJsonDepth, fromStoredJson, toStoredJson } from '../support/json';
import { FINISHED_STATUSES } from '../support/statuses';
import type { StepRow } from '../storage/store';
import { stepKey } from '../steps/step-key';
import { readWebhookRecord, storedWebhookRecord, type WebhookTarget } from '../webhooks/webhook';
import type { InstanceKernel } from './kernel';
import { WATCHDOG_MS } from '../support/timing';

/**
 * The one POST a webhook accepts (see webhook.ts; the Worker checked the token's
 * signature): its body completes the step's wait. Refused, changing nothing:
 * a token of another incarnation or generation (WEBHOOK_NOT_FOUND), a second
 * call (WEBHOOK_USED), a call after the timeout or after the instance ended
 * (WEBHOOK_EXPIRED). The body's limits are those of an event payload. With
 * `bodyText` (the POST as it came), the body is parsed only after those checks, so a
 * URL that no longer works answers why whatever its body (docs/writing-workflows.md "Webhook waits").
 */
export function completeWebhook(k: InstanceKernel, target: WebhookTarget, bodyInput: unknown, bodyText?: string): void {
	const row = k.require();
	const key = stepKey('webhook', target.step);
	const step = row.generation === target.generation ? k.host.store.readStep(key) : undefined;
	const record = step ? readWebhookRecord(step.result) : undefined;
	if (!step || !record || record.nonce !== target.nonce) {
		throw new WebhookNotFoundError(`workflow "${row.id}" has no such webhook (the instance was restarted or re-created since the URL was issued)`);
	}
	if (step.status === 'completed') throw new WebhookUsedError(`webhook "${target.step}" of workflow "${row.id}" was already called; a webhook URL works once`);
	const now = k.host.now();
	if (step.status === 'timed_out' || (record.expiresAt !== null && record.expiresAt <= now)) {
		throw new WebhookExpiredError(`webhook "${target.step}" of workflow "${row.id}" expired at ${new Date(record.expiresAt ?? now).toISOString()}`);
	}
	if (FINISHED_STATUSES.includes(row.status) || row.status === 'rolling_back') {
		throw new WebhookExpiredError(`workflow "${row.id}" is ${row.status}; its webhook "${target.step}" no longer accepts calls`);
	}
	if (bodyText !== undefined) bodyInput = parseWebhookBody(bodyText);
	assertJsonDepth(bodyInput, `body of webhook "${target.step}"`);
	const body = toStoredJson(bodyInput, `body of webhook "${target.step}"`);
	const done: StepRow = {
		...step,
		status: 'completed',
		result: storedWebhookRecord({ ...record, body: fromStoredJson(body), receivedAt: now }),
		finishedAt: now,
		wakeAt: null,
	};
	k.host.store.transaction(() => {
		k.host.store.writeStep(done);
		k.host.store.deleteWakeup(key);
		k.host.store.appendHistory(historyRow({ kind: 'webhook.received', step: target.step, value: body }, row.generation, now));
	});
	k.replay.noteStepRow(done);
	if (row.status === 'paused' || row.status === 'diverged') return;
	k.host.ensureAlarmBy(now + WATCHDOG_MS);
	k.replay.kick();
}

/** A webhook POST's body: JSON, and an empty one is null. */
function parseWebhookBody(text: string): unknown {
	if (text.trim() === '') return null;
	try {
		return JSON.parse(text);
	} catch {
		throw new ValidationError(ErrorCode.InvalidPayload, 'a webhook body must be JSON (or empty)');
	}
}
