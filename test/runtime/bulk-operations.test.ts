import { runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { archivePointerKey } from '../../src/engine/lifecycle/archive';
import { executions } from '../worker/probes';
import { describe, expect, it } from 'vitest';
import { bulk } from '../../src/client/bulk-client';
import { instances } from '../../src/client/instance-client';
import { BULK_RETENTION_MS, checkBulkAction, type BulkProgress, type BulkSpec } from '../../src/engine/bulk/bulk-job';
import { IndexClient } from '../../src/client/index-client';
import { BULK_PREFIX } from '../../src/engine/object-names';
import { ErrorCode } from '../../src/engine/support/errors';
import { advanceClock, resetClock, settle, stub, testEnv, uniqueId } from '../helpers';
import { testRegistry } from '../worker/index';
import { api } from '../api/helpers';
import { drizzle } from 'drizzle-orm/durable-sqlite';
import { bulkReceiptKey } from '../../src/engine/instance/bulk-receipt';
import { MAX_EVENT_KEYS } from '../../src/engine/support/limits';
import { DrizzleInstanceStore } from '../../src/runtime/drizzle-instance-store';
import { ObjectStorage } from '../../src/runtime/object-storage';

async function seed(customer: string, n: number, matchingEvery = 3) {
	const ids = Array.from({ length: n }, (_, i) => `${customer}-${String(i).padStart(2, '0')}`);
	await Promise.all(
		ids.map((id, i) => instances.create(testEnv, { type: 'searchable', id, payload: { customerId: 'x' }, attributes: { customerId: i % matchingEvery === 0 ? `${customer}-other` : customer } })),
	);
	await Promise.all(ids.map(settle));
	return { ids, matching: ids.filter((_, i) => i % matchingEvery !== 0), others: ids.filter((_, i) => i % matchingEvery === 0) };
}

/** Fires the job's alarm until it stops (each tick is one alarm, as in production). */
async function runJob(id: string): Promise<BulkProgress> {
	for (let i = 0; i < 200; i++) {
		const ran = await runDurableObjectAlarm(stub(`${BULK_PREFIX}${id}`));
		const progress = await bulk.progress(testEnv, id);
		if (!ran || progress.state !== 'running') return progress;
	}
	throw new Error('the job did not finish');
}

describe('bulk operations', () => {
	it('terminates exactly the instances an attribute query matches, across shards, and reports each done', async () => {
		const customer = uniqueId('bulk-term');
		const { matching, others } = await seed(customer, 24);
		const started = await bulk.start(testEnv, testRegistry, { query: { type: 'searchable', attributes: { customerId: customer } }, action: { kind: 'terminate' }, ratePerSecond: 5 });
		expect(started).toMatchObject({ state: 'running', matched: 0, done: 0 });
		const progress = await runJob(started.id);
		expect(progress).toMatchObject({ state: 'completed', matched: matching.length, done: matching.length, failed: 0, skipped: {} });
		for (const id of matching) expect((await instances.status(testEnv, { id })).status).toBe('terminated');
		for (const id of others) expect((await instances.status(testEnv, { id })).status).toBe('waiting');
	});

	it('sends an event to each matching instance once, with an idempotency key per instance', async () => {
		const customer = uniqueId('bulk-event');
		const { matching } = await seed(customer, 9);
		const { id } = await bulk.start(testEnv, testRegistry, {
			query: { type: 'searchable', status: ['waiting'], attributes: { customerId: customer } },
			action: { kind: 'sendEvent', event: 'advance', payload: { stage: 'bulk', done: true } },
			ratePerSecond: 1000,
		});
		const progress = await runJob(id);
		expect(progress).toMatchObject({ state: 'completed', matched: matching.length, done: matching.length });
		await Promise.all(matching.map(settle));
		for (const instance of matching) expect(await instances.status(testEnv, { id: instance })).toMatchObject({ status: 'completed', output: 'bulk' });
	});

	it('delivers an event once per instance across two jobs given the same idempotency key (a job started twice)', async () => {
		const customer = uniqueId('bulk-key');
		const { matching } = await seed(customer, 6);
		const key = `retry-${customer}`;
		const send = async (stage: string) =>
			runJob((await bulk.start(testEnv, testRegistry, { query: { type: 'searchable', attributes: { customerId: customer } }, action: { kind: 'sendEvent', event: 'advance', payload: { stage }, idempotencyKey: key }, ratePerSecond: 1000 })).id);
		expect(await send('first')).toMatchObject({ done: matching.length, failed: 0 });
		await Promise.all(matching.map(settle));
		// The same key with the same event and payload is the same send: accepted, delivered once.
		expect(await send('first')).toMatchObject({ done: matching.length, failed: 0 });
		await Promise.all(matching.map(settle));
		for (const id of matching) {
			const status = await instances.status(testEnv, { id });
			expect(status).toMatchObject({ status: 'waiting', attributes: { stage: 'first' }, bufferedEvents: 0 });
			expect(status.steps.filter((s) => s.name.startsWith('advance-'))).toHaveLength(2); // advance-0 took it, advance-1 still waits
		}
		// Another payload under the key is refused per instance, as the event route does.
		const refused = await send('second');
		expect(refused).toMatchObject({ done: 0, failed: matching.length });
		expect(refused.errors.map((e) => e.code)).toEqual(matching.map(() => 'IDEMPOTENCY_KEY_REUSED'));
	});

	// Issue 45 item 1: after a crash the job asks each instance it caught `acting` whether its action arrived (the
	// instance's receipt), never guesses from a version that the run itself moves (here: an event it takes by itself).
	it('after a crash between its actions and its records, acts on the instances its action never reached, even when their versions moved, and never twice', async () => {
		const customer = uniqueId('bulk-receipt');
		const { matching } = await seed(customer, 6, 100);
		const [reached, missed, untouched] = matching as [string, string, string];
		const job = crypto.randomUUID();
		const action = checkBulkAction({ kind: 'terminate' });
		const query = { type: 'searchable', attributes: { customerId: customer } };
		const spec: BulkSpec = { id: job, query, filters: { ...new IndexClient(testEnv, testRegistry).checkFilters(query), type: 'searchable' }, action, dryRun: false, ratePerSecond: 1000 };
		// The state a kill -9 leaves: `reached` got the action (and stored the job's receipt), `missed` never did; both
		// items `acting`, counted matched. The job's record of neither outcome was written.
		// (With the version each had when the job reached it, as the job wrote before it asked instances for receipts.)
		const seen = Object.fromEntries(await Promise.all([reached, missed].map(async (id) => [id, (await instances.currentIndexEntry(testEnv, { id }))!.version])));
		expect(await instances.bulkAct(testEnv, { id: reached, job, action })).toBe('applied');
		await runInDurableObject(stub(`${BULK_PREFIX}${job}`), async (runner, state) => {
			await (runner as unknown as { bulkStart(spec: BulkSpec): Promise<unknown> }).bulkStart(spec);
			// The job ticks when the test says so, not on its own meanwhile.
			await state.storage.setAlarm(Date.now() + 3_600_000);
			for (const id of [reached, missed]) state.storage.sql.exec(`INSERT INTO bulk_items (id, state, version) VALUES (?, 'acting', ?)`, id, seen[id]);
			state.storage.sql.exec(`INSERT INTO bulk_counts (counter, n) VALUES ('matched', 2)`);
		});
		// Meanwhile the runs move by themselves: each takes an event and waits again (a new version, no action of the job's).
		for (const id of [missed, untouched]) await instances.sendEvent(testEnv, { id, event: 'advance', payload: { stage: 'moved' } });
		await Promise.all(matching.map(settle));
		expect(await instances.bulkReceipt(testEnv, { id: missed, job, action })).toBe(false);
		expect(await instances.bulkReceipt(testEnv, { id: reached, job, action })).toBe(true);

		const progress = await runJob(job);
		expect(progress).toMatchObject({ state: 'completed', matched: matching.length, done: matching.length, failed: 0, skipped: {} });
		const terminations = async (id: string) => (await instances.history(testEnv, { id })).events.filter((e) => e.kind === 'workflow.terminated').length;
		for (const id of matching) expect([id, (await instances.status(testEnv, { id })).status, await terminations(id)]).toEqual([id, 'terminated', 1]);
		// Asked again (a job resumed once more), an instance that has the receipt changes nothing.
		expect(await instances.bulkAct(testEnv, { id: reached, job, action })).toBe('already');
		expect(await terminations(reached)).toBe(1);
	});

	it("stores a job's receipt in 3 SQLite rows (its key row, its unique index entry, the AUTOINCREMENT counter), 4 as an instance's first key", () =>
		runInDurableObject(stub(uniqueId('bulk-rows')), async (_, state) => {
			const storage = new ObjectStorage(state.storage, 'instance');
			await storage.open();
			await storage.ensureSchema();
			// Drizzle over the bare storage, so that every statement goes through the counting `exec` below.
			const store = new DrizzleInstanceStore(drizzle(state.storage), state.storage, { empty: true, tables: storage.firstWrite });
			const rowsWritten = (fn: () => void) => {
				const exec = state.storage.sql.exec.bind(state.storage.sql);
				const cursors: SqlStorageCursor<Record<string, SqlStorageValue>>[] = [];
				Object.defineProperty(state.storage.sql, 'exec', { value: (q: string, ...b: SqlStorageValue[]) => (cursors.push(exec(q, ...b)), cursors.at(-1)), configurable: true, writable: true });
				try {
					fn();
				} finally {
					Object.defineProperty(state.storage.sql, 'exec', { value: exec, configurable: true, writable: true });
				}
				return cursors.reduce((n, c) => n + c.rowsWritten, 0);
			};
			// The writes applyBulkAction adds to the action's own (engine/instance/bulk-receipt.ts).
			const receipt = (job: string) => rowsWritten(() => store.writeEventKey({ key: bulkReceiptKey(job, { kind: 'terminate' }), name: 'bulk.terminate', digest: '' }, 1, MAX_EVENT_KEYS));
			expect([receipt('job-a'), receipt('job-b'), receipt('job-c')]).toEqual([4, 3, 3]);
		}));

	it('counts on a dry run and acts on nothing', async () => {
		const customer = uniqueId('bulk-dry');
		const { matching, ids } = await seed(customer, 12);
		const { id } = await bulk.start(testEnv, testRegistry, { query: { type: 'searchable', attributes: { customerId: customer } }, action: { kind: 'terminate' }, dryRun: true });
		expect(await runJob(id)).toMatchObject({ state: 'completed', dryRun: true, matched: matching.length, done: 0 });
		for (const instance of ids) expect((await instances.status(testEnv, { id: instance })).status).toBe('waiting');
	});

	it('pauses, resumes, terminates, restarts, re-indexes and deletes the matching instances, each action once, and reports a refused one as skipped', async () => {
		const customer = uniqueId('bulk-actions');
		const { matching, others } = await seed(customer, 6);
		const query = { type: 'searchable', attributes: { customerId: customer } };
		const run = async (action: Parameters<typeof bulk.start>[2]['action'], status?: string[]) =>
			runJob((await bulk.start(testEnv, testRegistry, { query: { ...query, ...(status ? { status: status as never } : {}) }, action, ratePerSecond: 1000 })).id);

		expect(await run({ kind: 'pause' }, ['waiting'])).toMatchObject({ done: matching.length });
		await Promise.all(matching.map(settle));
		expect(await run({ kind: 'resume' }, ['paused'])).toMatchObject({ done: matching.length });
		await Promise.all(matching.map(settle));
		for (const id of matching) expect((await instances.status(testEnv, { id })).status).toBe('waiting');

		// A restart applies to a finished run: a waiting one refuses it, and the job reports that.
		expect(await run({ kind: 'restart' })).toMatchObject({ done: 0, skipped: { INVALID_STATE: matching.length } });
		expect(await run({ kind: 'terminate' })).toMatchObject({ done: matching.length });
		await Promise.all(matching.map(settle));
		const before = await Promise.all(matching.map((id) => instances.status(testEnv, { id })));
		expect(await run({ kind: 'restart' }, ['terminated'])).toMatchObject({ done: matching.length });
		await Promise.all(matching.map(settle));
		const after = await Promise.all(matching.map((id) => instances.status(testEnv, { id })));
		expect(after.map((s, i) => s.generation - before[i]!.generation)).toEqual(matching.map(() => 1));

		expect(await run({ kind: 'reindex' })).toMatchObject({ done: matching.length, failed: 0 });

		expect(await run({ kind: 'delete', terminate: true, archive: false })).toMatchObject({ done: matching.length, failed: 0 });
		for (const id of matching) await expect(instances.status(testEnv, { id })).rejects.toMatchObject({ code: ErrorCode.NotFound });
		for (const id of others) expect((await instances.status(testEnv, { id })).status).toBe('waiting');
	});

	it('terminates with rollback: each matching instance runs its compensations once and ends terminated', async () => {
		const prefix = `${uniqueId('bulk-rollback')}-`;
		const ids = [0, 1, 2].map((i) => `${prefix}${i}`);
		const other = uniqueId('bulk-rollback-other');
		await Promise.all([...ids, other].map((id) => instances.create(testEnv, { type: 'saga', id, payload: { wait: true } })));
		await Promise.all([...ids, other].map(settle));
		const { id: job } = await bulk.start(testEnv, testRegistry, { query: { type: 'saga', idPrefix: prefix, status: ['waiting'] }, action: { kind: 'terminate', rollback: true }, ratePerSecond: 1000 });
		expect(await runJob(job)).toMatchObject({ state: 'completed', matched: 3, done: 3, failed: 0 });
		await Promise.all(ids.map(settle));
		for (const id of ids) {
			expect(await instances.status(testEnv, { id })).toMatchObject({ status: 'terminated', rollback: { reason: 'terminated', state: 'completed', completed: 2 } });
			expect([executions.get(`${id}:undo-car:"C1"`), executions.get(`${id}:undo-flight:"F1"`)]).toEqual([1, 1]);
		}
		expect((await instances.status(testEnv, { id: other })).status).toBe('waiting');
		expect(executions.get(`${other}:undo-flight:"F1"`)).toBeUndefined();
	});

	it('deletes with archive: an archived copy exists for each deleted instance, and GET answers from it', async () => {
		const customer = uniqueId('bulk-archive');
		const { matching, others } = await seed(customer, 6);
		const { id: job } = await bulk.start(testEnv, testRegistry, { query: { type: 'searchable', attributes: { customerId: customer } }, action: { kind: 'delete', archive: true, terminate: true }, ratePerSecond: 1000 });
		expect(await runJob(job)).toMatchObject({ state: 'completed', matched: matching.length, done: matching.length, failed: 0 });
		const bucket = (env as unknown as { ARCHIVE: R2Bucket }).ARCHIVE;
		for (const id of matching) {
			expect(await bucket.head(archivePointerKey(id))).not.toBeNull();
			expect((await api('GET', `/workflows/${id}`)).json).toMatchObject({ id, type: 'searchable', status: 'terminated', archived: true });
		}
		for (const id of others) {
			expect(await bucket.head(archivePointerKey(id))).toBeNull();
			expect((await instances.status(testEnv, { id })).status).toBe('waiting');
		}
	});

	it('reads time conditions given as ISO 8601 text or ms of 12 digits or more, as the listing does', async () => {
		const customer = uniqueId('bulk-iso');
		const due = [Date.UTC(2024, 4, 1, 10), Date.UTC(2024, 4, 2, 10), Date.UTC(2024, 4, 3, 10)];
		await Promise.all(due.map((dueAt, i) => instances.create(testEnv, { type: 'searchable', id: `${customer}-${i}`, payload: { customerId: 'x' }, attributes: { customerId: customer, dueAt } })));
		await Promise.all(due.map((_, i) => settle(`${customer}-${i}`)));
		const res = await api('POST', '/workflows/bulk', {
			query: { type: 'searchable', createdAfter: '2000-01-01', createdBefore: Date.now() + 3_600_000, attributes: { customerId: customer, dueAt: { gte: '2024-05-02', lt: Date.UTC(2024, 4, 3, 10) } } },
			action: { kind: 'pause' },
			dryRun: true,
		});
		expect(res.status).toBe(202);
		expect(await runJob(res.json.id)).toMatchObject({ state: 'completed', matched: 1 });
		const listed = await api('GET', `/workflows?type=searchable&attr.customerId=${customer}&attr.dueAt.gte=2024-05-02&attr.dueAt.lt=2024-05-03T10:00:00Z`);
		expect(listed.json.items.map((e: { id: string }) => e.id)).toEqual([`${customer}-1`]);
	});

	it('refuses a query on an undeclared attribute or an unknown action before starting anything', async () => {
		await expect(bulk.start(testEnv, testRegistry, { query: { type: 'searchable', attributes: { region: 'eu' } } as never, action: { kind: 'terminate' } })).rejects.toMatchObject({ code: ErrorCode.InvalidQuery });
		await expect(bulk.start(testEnv, testRegistry, { query: { type: 'searchable' }, action: { kind: 'explode' } as never })).rejects.toMatchObject({ code: ErrorCode.InvalidRequest });
		await expect(bulk.start(testEnv, testRegistry, { query: { type: 'searchable' }, action: { kind: 'pause' }, ratePerSecond: 0 })).rejects.toMatchObject({ code: ErrorCode.InvalidRequest });
	});
});

describe('bulk operations over HTTP', () => {
	it('starts a job with 202, answers its progress and cancels it', async () => {
		const customer = uniqueId('bulk-http');
		const { matching } = await seed(customer, 6);
		const res = await api('POST', '/workflows/bulk', { query: { type: 'searchable', attributes: { customerId: customer } }, action: { kind: 'pause' }, ratePerSecond: 1000 });
		expect(res.status).toBe(202);
		const progress = await runJob(res.json.id);
		expect(progress).toMatchObject({ state: 'completed', done: matching.length });
		const got = await api('GET', `/bulk/${res.json.id}`);
		expect(got.json).toMatchObject({ id: res.json.id, state: 'completed', matched: matching.length, done: matching.length });
		for (const id of matching) expect((await instances.status(testEnv, { id })).status).toBe('paused');
		const cancelled = await api('POST', `/bulk/${res.json.id}/cancel`);
		expect(cancelled.json.state).toBe('completed');
	});

	it.for([
		['an undeclared attribute', { query: { type: 'searchable', attributes: { region: 'eu' } }, action: { kind: 'terminate' } }, 'INVALID_QUERY'],
		['an unknown action', { query: { type: 'searchable' }, action: { kind: 'explode' } }, 'INVALID_REQUEST'],
		['no type', { query: {}, action: { kind: 'terminate' } }, 'INVALID_REQUEST'],
		['a rate above the limit', { query: { type: 'searchable' }, action: { kind: 'pause' }, ratePerSecond: 5000 }, 'INVALID_REQUEST'],
		['an event the type does not declare', { query: { type: 'searchable' }, action: { kind: 'sendEvent', event: 'nope', payload: {} } }, 'UNKNOWN_EVENT'],
		["a payload the event's schema refuses", { query: { type: 'searchable' }, action: { kind: 'sendEvent', event: 'advance', payload: { bad: 1 } } }, 'INVALID_EVENT_PAYLOAD'],
		['a malformed restart point', { query: { type: 'searchable' }, action: { kind: 'restart', from: { name: 'nope', count: -5 } } }, 'INVALID_OPTIONS'],
		['an empty restart point', { query: { type: 'searchable' }, action: { kind: 'restart', from: '' } }, 'INVALID_OPTIONS'],
		['a rollback option that is not a boolean', { query: { type: 'searchable' }, action: { kind: 'terminate', rollback: 'yes' } }, 'INVALID_REQUEST'],
		['an archive option that is not a boolean', { query: { type: 'searchable' }, action: { kind: 'delete', archive: 1 } }, 'INVALID_REQUEST'],
		['an event without a name', { query: { type: 'searchable' }, action: { kind: 'sendEvent' } }, 'INVALID_REQUEST'],
		['an idempotency key with a space', { query: { type: 'searchable' }, action: { kind: 'sendEvent', event: 'advance', payload: { stage: 'x' }, idempotencyKey: 'a b' } }, 'INVALID_IDEMPOTENCY_KEY'],
		['a bare 4-digit datetime', { query: { type: 'searchable', attributes: { dueAt: { lt: '2024' } } }, action: { kind: 'pause' } }, 'INVALID_QUERY'],
		['a datetime given as the JSON number 2024', { query: { type: 'searchable', attributes: { dueAt: { lt: 2024 } } }, action: { kind: 'pause' } }, 'INVALID_QUERY'],
		['an ISO 8601 basic date as a JSON number', { query: { type: 'searchable', attributes: { dueAt: 20240301 } }, action: { kind: 'pause' } }, 'INVALID_QUERY'],
		['createdAfter as the JSON number 2024', { query: { type: 'searchable', createdAfter: 2024 }, action: { kind: 'pause' } }, 'INVALID_QUERY'],
		['updatedBefore as a bare year in text', { query: { type: 'searchable', updatedBefore: '2024' }, action: { kind: 'pause' } }, 'INVALID_QUERY'],
		['the reserved attribute name constructor', { query: { type: 'searchable', attributes: { constructor: 'x' } }, action: { kind: 'pause' } }, 'INVALID_QUERY'],
	] as const)('answers 400 for %s and starts nothing', async ([, body, code]) => {
		const res = await api('POST', '/workflows/bulk', body);
		expect(res.status).toBe(400);
		expect(res.json.error.code).toBe(code);
	});

	it.for([
		['sendEvent', { kind: 'sendEvent', event: 'advance', payload: { stage: 'x' }, idempotency_key: 'k1' }, 'idempotency_key'],
		['delete', { kind: 'delete', archiv: true }, 'archiv'],
		['restart', { kind: 'restart', form: 'x' }, 'form'],
		['pause', { kind: 'pause', rollback: true }, 'rollback'],
	] as const)('refuses a %s action with an unknown key with 400 INVALID_REQUEST naming it, and starts nothing', async ([, action, key]) => {
		const res = await api('POST', '/workflows/bulk', { query: { type: 'searchable' }, action });
		expect(res.status).toBe(400);
		expect(res.json.error).toMatchObject({ code: 'INVALID_REQUEST', message: expect.stringContaining(key) });
		// The engine's check refuses it too (a job started through the client, not the route).
		expect(() => checkBulkAction(action)).toThrow(expect.objectContaining({ code: 'INVALID_REQUEST', message: expect.stringContaining(`"${key}"`) }));
	});

	it('documents each action as a strict object in the OpenAPI document', async () => {
		const doc = (await api('GET', '/openapi.json')).json;
		const action = doc.components.schemas.BulkOperation.properties.action;
		const variants = (action.oneOf ?? action.anyOf) as { additionalProperties?: unknown; properties: { kind: { const?: string; enum?: string[] } } }[];
		expect(variants.length).toBe(7);
		for (const variant of variants) expect(variant.additionalProperties).toBe(false);
	});

	it('refuses an own "__proto__" attribute condition (that the schema would drop, widening the query to the whole type) with 400 INVALID_QUERY', async () => {
		const res = await api('POST', '/workflows/bulk', '{"query":{"type":"searchable","attributes":{"__proto__":"x"}},"action":{"kind":"pause"},"dryRun":true}');
		expect(res.status).toBe(400);
		expect(res.json.error).toMatchObject({ code: 'INVALID_QUERY', message: expect.stringContaining('"__proto__" is reserved') });
	});

	it('answers 404 for a job that does not exist and 400 for an id that cannot be one', async () => {
		expect((await api('GET', '/bulk/01936f5e-8a4b-7c3d-9e2f-1a2b3c4d5e6f')).status).toBe(404);
		expect((await api('GET', '/bulk/not-a-job')).status).toBe(400);
	});

	it('DELETE /bulk/{id} refuses a running job with 409 INVALID_STATE, deletes it once cancelled, then answers 404', async () => {
		const customer = uniqueId('bulk-delete');
		await seed(customer, 9);
		// One instance a second: the job runs for seconds.
		const { json: job } = await api('POST', '/workflows/bulk', { query: { type: 'searchable', attributes: { customerId: customer } }, action: { kind: 'pause' }, ratePerSecond: 1 });
		const running = await api('DELETE', `/bulk/${job.id}`);
		expect(running.status).toBe(409);
		expect(running.json.error).toMatchObject({ code: 'INVALID_STATE', message: expect.stringContaining('cancel it first') });
		expect((await api('GET', `/bulk/${job.id}`)).json.state).toBe('running');
		expect((await api('POST', `/bulk/${job.id}/cancel`)).json.state).toBe('cancelled');
		const deleted = await api('DELETE', `/bulk/${job.id}`);
		expect([deleted.status, deleted.json]).toEqual([200, { id: job.id, deleted: true }]);
		// The object is empty: no progress, no alarm, nothing to delete again.
		expect((await api('GET', `/bulk/${job.id}`)).json.error.code).toBe('NOT_FOUND');
		const again = await api('DELETE', `/bulk/${job.id}`);
		expect([again.status, again.json.error.code]).toEqual([404, 'NOT_FOUND']);
		expect(await runInDurableObject(stub(`${BULK_PREFIX}${job.id}`), async (_, state) => [await state.storage.getAlarm(), state.storage.sql.exec(`SELECT count(*) AS n FROM sqlite_master WHERE type = 'table'`).one().n])).toEqual([null, 0]);
		expect((await api('DELETE', '/bulk/01936f5e-8a4b-7c3d-9e2f-1a2b3c4d5e6f')).json.error.code).toBe('NOT_FOUND');
		expect((await api('DELETE', '/bulk/not-a-job')).status).toBe(400);
	});

	it('bulk.delete (the typed client) deletes a finished job and refuses a running one with INVALID_STATE', async () => {
		const customer = uniqueId('bulk-client-delete');
		await seed(customer, 9);
		const job = await bulk.start(testEnv, testRegistry, { query: { type: 'searchable', attributes: { customerId: customer } }, action: { kind: 'pause' }, ratePerSecond: 1 });
		await expect(bulk.delete(testEnv, job.id)).rejects.toMatchObject({ code: ErrorCode.InvalidState });
		await bulk.cancel(testEnv, job.id);
		expect(await bulk.delete(testEnv, job.id)).toEqual({ id: job.id, deleted: true });
		await expect(bulk.progress(testEnv, job.id)).rejects.toMatchObject({ code: ErrorCode.NotFound });
	});

	it('erases a finished job from its alarm 7 days after it finished, and keeps it until then', async () => {
		const customer = uniqueId('bulk-retention');
		await seed(customer, 3);
		const { json: job } = await api('POST', '/workflows/bulk', { query: { type: 'searchable', attributes: { customerId: customer } }, action: { kind: 'reindex' }, ratePerSecond: 1000 });
		const done = await runJob(job.id);
		expect(done.state).toBe('completed');
		const jobStub = stub(`${BULK_PREFIX}${job.id}`);
		expect(await runInDurableObject(jobStub, (_, state) => state.storage.getAlarm())).toBe(done.finishedAt! + BULK_RETENTION_MS);
		try {
			advanceClock(BULK_RETENTION_MS - 60_000);
			await runDurableObjectAlarm(jobStub);
			expect((await api('GET', `/bulk/${job.id}`)).json.state).toBe('completed');
			advanceClock(60_000);
			expect(await runDurableObjectAlarm(jobStub)).toBe(true);
			expect((await api('GET', `/bulk/${job.id}`)).status).toBe(404);
		} finally {
			resetClock();
		}
	});
});
