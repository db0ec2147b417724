import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { checkBulkActionFor } from '../../src/engine/bulk/bulk-action-check';
import { defineRegistry } from '../../src/engine/definition/registry';
import { ErrorCode } from '../../src/engine/support/errors';
import { Workflow } from '../../src/workflow';
import type { StepOf } from '../../src/engine/definition/class-types';

class Approval extends Workflow<{}, string> {
	static override readonly type = 'approval';
	static override events = { decision: z.object({ approved: z.boolean() }) };
	async run(step: StepOf<typeof Approval>): Promise<string> {
		const decision = await step.waitForEvent('decision');
		return decision.approved ? 'approved' : 'declined';
	}
}
const entry = defineRegistry({ approval: { workflow: Approval } }).get('approval');

describe('a bulk action checked against its type before the job starts', () => {
	it.for([
		['an event the type does not declare', { kind: 'sendEvent', event: 'nope', payload: {} }, true, ErrorCode.UnknownEvent],
		["a payload the event's schema refuses", { kind: 'sendEvent', event: 'decision', payload: { approved: 'yes' } }, true, ErrorCode.InvalidEventPayload],
		['a restart point with a count below 1', { kind: 'restart', from: { name: 'decision', count: 0 } }, true, ErrorCode.InvalidOptions],
		['a restart point with an unknown field', { kind: 'restart', from: { name: 'decision', when: 'now' } }, true, ErrorCode.InvalidOptions],
		['a delete with archive when no bucket is bound', { kind: 'delete', archive: true }, false, ErrorCode.ArchiveNotConfigured],
	] as const)('refuses %s', async ([, action, archiveBound, code]) => {
		await expect(checkBulkActionFor(entry, action as never, archiveBound)).rejects.toMatchObject({ code });
	});

	it.for([
		['an event with a payload the schema takes', { kind: 'sendEvent', event: 'decision', payload: { approved: true } }, false],
		['a restart from a named step (whether each instance has it is decided per instance)', { kind: 'restart', from: { name: 'anything', type: 'waitForEvent' } }, false],
		['a delete with archive when the bucket is bound', { kind: 'delete', archive: true }, true],
		['a delete without archive and no bucket', { kind: 'delete' }, false],
		['a pause', { kind: 'pause' }, false],
	] as const)('lets through %s', async ([, action, archiveBound]) => {
		await expect(checkBulkActionFor(entry, action as never, archiveBound)).resolves.toBeUndefined();
	});
});
