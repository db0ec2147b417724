import { describe, expect, it } from 'vitest';
import { fullRecord, leanRecord } from '../../src/runtime/compact-lean-record';
import { packRow, storedRecord, type InstanceRecord } from '../../src/runtime/compact-instance-record';

function record(): InstanceRecord {
	const row = packRow({ id: 'a', type: 't', status: 'running', payload: null, output: null, errorName: null, errorMessage: null, errorStack: null, errorCode: null, createdAt: 1, updatedAt: 2, version: 3, generation: 0 });
	return { row, pending: null, recs: [storedRecord(1, { generation: 0, at: 1, kind: 'workflow.created', step: null, attempt: null, value: '{"x":1}', detail: null })] };
}

describe('the instance record as storage format 5 stores it (compact-lean-record.ts)', () => {
	it('reads back exactly as written, every null column, zero total, null pending entry and null record field restored', () => {
		const stored = JSON.parse(JSON.stringify(leanRecord(record()))) as InstanceRecord;
		expect(fullRecord(stored)).toEqual(record());
	});

	it('stores none of the fields that hold their usual value, and is about half as long', () => {
		const lean = leanRecord(record());
		expect(Object.keys(lean)).toEqual(['row', 'recs']);
		expect(Object.values(lean.row)).not.toContain(null);
		expect(lean.recs[0]).toEqual({ seq: 1, generation: 0, at: 1, kind: 'workflow.created', value: '{"x":1}' });
		expect(JSON.stringify(lean).length).toBeLessThan(JSON.stringify(record()).length * 0.6);
	});

	it('leaves the record the isolate keeps whole, and reads a whole record (earlier formats) unchanged', () => {
		const whole = record();
		leanRecord(whole);
		expect(whole).toEqual(record());
		expect(fullRecord(record())).toEqual(record());
	});
});
