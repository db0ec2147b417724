import type { ResolvedEntry } from '../definition/registry';
import { validateEventPayload } from '../definition/schema-validation';
import { checkRestartFrom } from '../steps/restart-from';
import { ErrorCode, ValidationError } from '../support/errors';
import { assertJsonDepth } from '../support/json';
import type { BulkAction } from './bulk-job';

/**
 * Refuses, before a job starts, an action that every instance of the type would refuse: an event
 * the type does not declare, a payload its schema refuses, a malformed restart point, an archive
 * with no bucket bound. What depends on each instance (its status, its steps) is still decided
 * per instance and reported as skipped or failed.
 */
export async function checkBulkActionFor(entry: ResolvedEntry, action: BulkAction, archiveBound: boolean): Promise<void> {
	switch (action.kind) {
		case 'sendEvent': {
			const events = entry.workflow.events ?? {};
			if (!Object.hasOwn(events, action.event)) {
				const declared = Object.keys(events);
				throw new ValidationError(
					ErrorCode.UnknownEvent,
					`workflow type "${entry.type}" does not declare event ${JSON.stringify(action.event)}${declared.length ? `; declared events: ${declared.join(', ')}` : ' (it declares no events)'}`,
				);
			}
			assertJsonDepth(action.payload, `payload of event "${action.event}"`);
			await validateEventPayload(events[action.event], action.payload, action.event, ErrorCode.InvalidEventPayload);
			return;
		}
		case 'restart':
			if (action.from !== undefined) checkRestartFrom(action.from);
			return;
		case 'delete':
			if (action.archive === true && !archiveBound) {
				throw new ValidationError(ErrorCode.ArchiveNotConfigured, 'archive requested, but no archive bucket is bound (ARCHIVE); see docs/operations.md "Retention and deletion"');
			}
			return;
		default:
			return;
	}
}
