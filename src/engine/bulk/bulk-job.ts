import { ErrorCode, InvalidStateError, ShardflowError, ValidationError } from '../support/errors';
import type { IndexEntry } from '../index/index-entry';
import type { ListFilters } from '../index/index-query';
import type { RestartFrom } from '../steps/restart-from';
import type { CheckedCondition } from '../index/search-attributes';
import type { WorkflowStatus } from '../support/statuses';
import { assertValidIdempotencyKey } from '../support/ids';

/**
 * A bulk operation (`POST /workflows/bulk`): one action applied to every instance a listing
 * query matches, as a durable job in its own object (`__bulk:<id>`, runtime/roles/bulk-role.ts).
 * This module is its pure core: the job's state, one tick of its walk, the per-instance
 * bookkeeping that makes it resumable and idempotent, and the check that an instance still
 * matches when it is reached.
 */

export type BulkAction =
	| { kind: 'terminate'; rollback?: boolean }
	| { kind: 'pause' }
	| { kind: 'resume' }
	| { kind: 'restart'; from?: RestartFrom }
	| { kind: 'delete'; archive?: boolean; terminate?: boolean }
	/** `idempotencyKey`: the key of every instance's event (default `bulk:<job id>`); give the same one to a job started again, and no instance gets the event twice. */
	| { kind: 'sendEvent'; event: string; payload?: unknown; idempotencyKey?: string }
	| { kind: 'reindex' };

export const BULK_ACTIONS = ['terminate', 'pause', 'resume', 'restart', 'delete', 'sendEvent', 'reindex'] as const;

/** The options each action takes besides `kind`; any other key is refused. */
const ACTION_OPTIONS: Record<BulkAction['kind'], readonly string[]> = {
	terminate: ['rollback'],
	pause: [],
	resume: [],
	restart: ['from'],
	delete: ['archive', 'terminate'],
	sendEvent: ['event', 'payload', 'idempotencyKey'],
	reindex: [],
};

/** The query of a job, checked (the listing's filters with attribute conditions already checked); `type` is required. */
export interface BulkQuery extends ListFilters {
	type: string;
}

export interface BulkSpec {
	id: string;
	/** The query as given (what the index walk is asked, JSON). */
	query: { type: string } & Record<string, unknown>;
	/** The same query, checked: what `entryMatches` holds an instance to when it is reached. */
	filters: BulkQuery;
	action: BulkAction;
	/** Count what the query matches; act on nothing. */
	dryRun: boolean;
	/** Instances acted on per second at most (1-1000). */
	ratePerSecond: number;
}

export type BulkState = 'running' | 'completed' | 'cancelled';

/** What `GET /bulk/:id` answers. */
export interface BulkProgress {
	id: string;
	state: BulkState;
	dryRun: boolean;
	action: BulkAction;
	query: BulkSpec['query'];
	/** Instances the walk listed (they matched when listed). */
	matched: number;
	/** Acted on successfully (for a dry run: 0). */
	done: number;
	/** Listed but not acted on, per reason (`no_longer_matches`, `not_found`, or an error code such as `INVALID_STATE`). */
	skipped: Record<string, number>;
	/** The action failed for another reason; the last few are in `errors`. */
	failed: number;
	errors: { id: string; code: string; message: string }[];
	createdAt: number;
	updatedAt: number;
	finishedAt: number | null;
}

/**
 * One instance's bookkeeping: `acting` is written before the action is sent. After a crash, an
 * instance left `acting` is asked whether the action reached it (`BulkHost.reached`).
 */
export type BulkItem = { state: 'acting' } | { state: 'done' | 'failed' } | { state: 'skipped'; reason: string };

/** The job row: what was asked, where the walk stands, and how it ended. */
export interface BulkJobRow {
	spec: BulkSpec;
	state: BulkState;
	cursor: string | null;
	errors: BulkProgress['errors'];
	createdAt: number;
	updatedAt: number;
	finishedAt: number | null;
}

/** The counters, kept in the same transaction as each item they count (so a crash never skews them). */
export interface BulkCounts {
	matched: number;
	done: number;
	failed: number;
	skipped: Record<string, number>;
}

export const DEFAULT_BULK_RATE = 50;
export const MAX_BULK_RATE = 1000;
/** Instances per tick at most, whatever the rate (one listing page). */
export const BULK_BATCH = 100;
/** Actions in flight at once within a tick: no shard or instance sees a burst. */
export const BULK_CONCURRENCY = 8;
const MAX_ERRORS_KEPT = 20;
/**
 * How long a finished job (completed or cancelled) keeps its progress before its object erases
 * itself: long enough to read the outcome after a weekend, short enough that jobs do not pile up
 * for good (one job object and one row per instance it listed).
 */
export const BULK_RETENTION_MS = 604_800_000; // 7 days

/**
 * Checks the action of a request: an unknown kind or a malformed option is INVALID_REQUEST, as
 * the route's schema answers for the rest of the body (the action is not part of the query).
 */
export function checkBulkAction(action: unknown): BulkAction {
	const bad = (why: string) => new ValidationError(ErrorCode.InvalidRequest, `action: ${why}`);
	if (typeof action !== 'object' || action === null) throw bad(`give an object with kind (${BULK_ACTIONS.join(', ')})`);
	const a = action as Record<string, unknown>;
	if (!(BULK_ACTIONS as readonly unknown[]).includes(a.kind)) throw bad(`unknown kind ${JSON.stringify(a.kind)}; use one of ${BULK_ACTIONS.join(', ')}`);
	// An unknown key is refused, never dropped: `idempotency_key` would send without the key, `archiv` delete without archiving.
	const takes = ACTION_OPTIONS[a.kind as BulkAction['kind']];
	const unknown = Object.keys(a).find((key) => key !== 'kind' && !takes.includes(key));
	if (unknown !== undefined) throw bad(`${a.kind} has no option ${JSON.stringify(unknown)}; it takes ${takes.length ? takes.join(', ') : 'none'}`);
	const flag = (name: string) => {
		if (a[name] !== undefined && typeof a[name] !== 'boolean') throw bad(`${name} must be true or false`);
		return a[name] === true;
	};
	switch (a.kind) {
		case 'terminate':
			return { kind: 'terminate', ...(flag('rollback') ? { rollback: true } : {}) };
		case 'delete':
			return { kind: 'delete', ...(a.archive !== undefined ? { archive: flag('archive') } : {}), ...(flag('terminate') ? { terminate: true } : {}) };
		case 'restart':
			return { kind: 'restart', ...(a.from !== undefined ? { from: a.from as RestartFrom } : {}) };
		case 'sendEvent':
			if (typeof a.event !== 'string' || a.event.length === 0 || a.event.length > 256) throw bad('sendEvent needs event: a name of 1-256 characters');
			if (a.idempotencyKey !== undefined) assertValidIdempotencyKey(a.idempotencyKey);
			return { kind: 'sendEvent', event: a.event, ...(a.payload !== undefined ? { payload: a.payload } : {}), ...(a.idempotencyKey !== undefined ? { idempotencyKey: a.idempotencyKey } : {}) };
		default:
			return { kind: a.kind as 'pause' | 'resume' | 'reindex' };
	}
}

/**
 * The idempotency key of a job's event (per instance, since keys are kept per instance): a
 * resumed job that sends again is accepted once. The action's own key when it gives one, so
 * that a job started twice (a retried request, a second click) delivers once as well.
 */
export function bulkEventKey(jobId: string, action?: { idempotencyKey?: string }): string {
	return action?.idempotencyKey ?? `bulk:${jobId}`;
}

/**
 * Whether an entry (the instance's current one) still matches a job's query: the same
 * conditions the shards apply in SQL, on one row.
 */
export function entryMatches(entry: IndexEntry, query: BulkQuery): boolean {
	if (entry.type !== query.type) return false;
	if (query.status?.length && !query.status.includes(entry.status as WorkflowStatus)) return false;
	if (query.createdAfter !== undefined && !(entry.createdAt > query.createdAfter)) return false;
	if (query.createdBefore !== undefined && !(entry.createdAt < query.createdBefore)) return false;
	if (query.updatedAfter !== undefined && !(entry.updatedAt > query.updatedAfter)) return false;
	if (query.updatedBefore !== undefined && !(entry.updatedAt < query.updatedBefore)) return false;
	if (query.codeVersion !== undefined && entry.codeVersion !== query.codeVersion) return false;
	if (query.parent !== undefined && entry.parentId !== query.parent) return false;
	if (query.idPrefix !== undefined && !entry.id.startsWith(query.idPrefix)) return false;
	for (const [name, condition] of Object.entries(query.attributes ?? {})) {
		const value = entry.attributes?.[name];
		if (value === undefined || !satisfies(value, condition)) return false;
	}
	return true;
}

function satisfies(value: string | number | boolean, c: CheckedCondition): boolean {
	switch (c.op) {
		case 'eq':
			return value === c.value;
		case 'in':
			return c.values.includes(value);
		case 'range': {
			const x = value as number;
			return (c.gt === undefined || x > c.gt) && (c.gte === undefined || x >= c.gte) && (c.lt === undefined || x < c.lt) && (c.lte === undefined || x <= c.lte);
		}
	}
}

/**
 * Where the job's storage stands (runtime/bulk-store.ts implements it over SQLite). Synchronous,
 * like Durable Object SQLite: `settle` writes an item and its counters in one transaction.
 */
export interface BulkStore {
	readJob(): BulkJobRow | undefined;
	writeJob(job: BulkJobRow): void;
	counts(): BulkCounts;
	readItem(id: string): BulkItem | undefined;
	/** The instances caught `acting` (a crash between an action and its record): at most one tick's worth. */
	actingItems(): string[];
	/** Writes the item and adds 1 to each counter named (`matched`, `done`, `failed`, `skipped:<reason>`), together. */
	settle(id: string, item: BulkItem, counters: string[]): void;
	/** Adds `n` to `matched` and moves the cursor, together (a dry run's page). */
	countPage(n: number, cursor: string | null): void;
}

/** What a job needs of the world: the index walk and the instances. */
export interface BulkHost {
	now(): number;
	store: BulkStore;
	/** One page of the job's query after `cursor` (the index's own keyset cursor). */
	list(query: BulkSpec['query'], cursor: string | null, limit: number): Promise<{ items: IndexEntry[]; nextCursor: string | null }>;
	/** The instance's current entry, or null when it is gone (NOT_FOUND). */
	current(id: string): Promise<IndexEntry | null>;
	/**
	 * Applies the action to one instance, at most once per job: the instance stores the job's
	 * receipt with the action's effect, and a second call changes nothing. Throws the instance's typed error.
	 */
	act(id: string, action: BulkAction, jobId: string): Promise<void>;
	/**
	 * Whether job `jobId`'s action reached the instance (its receipt is stored); null when the
	 * instance is gone (NOT_FOUND), which keeps nothing to ask.
	 */
	reached(id: string, action: BulkAction, jobId: string): Promise<boolean | null>;
	setAlarm(at: number | null): void;
	/** Deletes the job's whole storage and its alarm: the job no longer exists (NOT_FOUND), and its id can never start again. */
	erase(): Promise<void>;
}

function progressOf(job: BulkJobRow, counts: BulkCounts): BulkProgress {
	const { spec } = job;
	return {
		id: spec.id, state: job.state, dryRun: spec.dryRun, action: spec.action, query: spec.query, ...counts,
		errors: job.errors, createdAt: job.createdAt, updatedAt: job.updatedAt, finishedAt: job.finishedAt,
	};
}

/** Starts a job (idempotent by id: a job that exists answers its progress). */
export function startJob(host: BulkHost, spec: BulkSpec): BulkProgress {
	const existing = host.store.readJob();
	if (existing) return progressOf(existing, host.store.counts());
	const now = host.now();
	const job: BulkJobRow = { spec, state: 'running', cursor: null, errors: [], createdAt: now, updatedAt: now, finishedAt: null };
	host.store.writeJob(job);
	host.setAlarm(now);
	return progressOf(job, host.store.counts());
}

export function cancelJob(host: BulkHost): BulkProgress {
	const job = requireJob(host);
	if (job.state !== 'running') return progressOf(job, host.store.counts());
	const now = host.now();
	const cancelled: BulkJobRow = { ...job, state: 'cancelled', updatedAt: now, finishedAt: now };
	host.store.writeJob(cancelled);
	host.setAlarm(now + BULK_RETENTION_MS);
	return progressOf(cancelled, host.store.counts());
}

/**
 * Deletes a finished job (completed or cancelled) and everything it kept. A running one is
 * refused with INVALID_STATE, as a running instance's delete is: cancel it first, so that a
 * delete never stops work as a side effect.
 */
export async function deleteJob(host: BulkHost): Promise<{ id: string; deleted: true }> {
	const job = requireJob(host);
	if (job.state === 'running') {
		throw new InvalidStateError(`bulk operation ${job.spec.id} is running: cancel it first (POST /bulk/${job.spec.id}/cancel), then delete it`);
	}
	// A cancel lets the batch in progress finish: deleting now would leave its actions landing
	// on instances for a job that no longer exists, with no record of them.
	if (ticking.has(host)) {
		throw new InvalidStateError(`bulk operation ${job.spec.id} is still acting on the batch it began before it was cancelled: try again in a moment`);
	}
	await host.erase();
	return { id: job.spec.id, deleted: true };
}

export function jobProgress(host: BulkHost): BulkProgress {
	return progressOf(requireJob(host), host.store.counts());
}

function requireJob(host: BulkHost): BulkJobRow {
	const job = host.store.readJob();
	if (!job) throw new ShardflowError(ErrorCode.NotFound, 'no such bulk operation');
	return job;
}

/**
 * One tick of a job (its alarm): reads the next page of its query and settles each instance on
 * it, at most `BULK_CONCURRENCY` at a time, then saves the cursor and sets the next alarm so
 * the job keeps to its rate. A crash anywhere resumes from the last saved cursor: instances of
 * the page already settled are recognised by their item row and neither counted nor acted on
 * again; one caught between `acting` and its outcome is asked whether the action reached it
 * (its receipt): counted done if it did (or it is gone, for a delete), checked and acted on
 * otherwise. Never from its version, which the run moves by itself (a sleep, a retry).
 */
export async function runTick(host: BulkHost): Promise<void> {
	ticking.add(host);
	try {
		await tick(host);
	} finally {
		ticking.delete(host);
	}
}

/**
 * The hosts (one per job object) whose tick is running now. In memory on purpose: after a crash
 * no tick runs, and the next one settles what the lost one left `acting`.
 */
const ticking = new WeakSet<BulkHost>();

async function tick(host: BulkHost): Promise<void> {
	const job = host.store.readJob();
	if (!job) return;
	// A finished job's alarm is its retention running out.
	if (job.state !== 'running') {
		const expires = (job.finishedAt ?? job.updatedAt) + BULK_RETENTION_MS;
		if (host.now() >= expires) await host.erase();
		else host.setAlarm(expires);
		return;
	}
	const { spec } = job;
	const started = host.now();
	const batch = spec.dryRun ? 1000 : Math.min(BULK_BATCH, Math.max(1, spec.ratePerSecond));
	const errors: BulkProgress['errors'] = [];
	// Instances a crash caught between their action and its record: the index may no longer list them.
	for (const id of host.store.actingItems()) await settleOne(host, spec, id, errors);
	const page = await host.list(spec.query, job.cursor, batch);
	if (spec.dryRun) {
		host.store.countPage(page.items.length, page.nextCursor);
	} else {
		const queue = [...page.items];
		const worker = async () => {
			for (let entry = queue.shift(); entry; entry = queue.shift()) await settleOne(host, spec, entry.id, errors);
		};
		await Promise.all(Array.from({ length: BULK_CONCURRENCY }, worker));
	}
	// Cancelled while this tick ran: keep what it did, stay cancelled.
	const now = host.now();
	const latest = host.store.readJob() ?? job;
	const finished = page.nextCursor === null;
	const state: BulkState = latest.state === 'cancelled' ? 'cancelled' : finished ? 'completed' : 'running';
	host.store.writeJob({
		...latest,
		state,
		cursor: page.nextCursor,
		errors: [...latest.errors, ...errors].slice(-MAX_ERRORS_KEPT),
		updatedAt: now,
		finishedAt: state === 'running' ? null : (latest.finishedAt ?? now),
	});
	if (state !== 'running') return host.setAlarm((latest.finishedAt ?? now) + BULK_RETENTION_MS);
	const spacing = spec.dryRun ? 0 : Math.ceil((page.items.length * 1000) / spec.ratePerSecond);
	host.setAlarm(Math.max(now, started + spacing));
}

async function settleOne(host: BulkHost, spec: BulkSpec, id: string, errors: BulkProgress['errors']): Promise<void> {
	const item = host.store.readItem(id);
	if (item && item.state !== 'acting') return; // settled (and counted) before a crash
	// `matched` is counted with the instance's first item row, whatever it is.
	const first = item ? [] : ['matched'];
	const skip = (reason: string) => host.store.settle(id, { state: 'skipped', reason }, [...first, `skipped:${reason}`]);
	if (item?.state === 'acting') {
		// A crash came between the action and its record: the instance knows whether the action
		// reached it. A deleted instance keeps nothing to ask; gone is what a delete does.
		const reached = await host.reached(id, spec.action, spec.id);
		if (reached === true || (reached === null && spec.action.kind === 'delete')) return host.store.settle(id, { state: 'done' }, ['done']);
	}
	const current = await host.current(id);
	if (current === null) return skip('not_found');
	if (!entryMatches(current, spec.filters)) return skip('no_longer_matches');
	host.store.settle(id, { state: 'acting' }, first);
	try {
		await host.act(id, spec.action, spec.id);
		host.store.settle(id, { state: 'done' }, ['done']);
	} catch (error) {
		const code = error instanceof ShardflowError ? error.code : (error as { code?: string })?.code;
		// Gone meanwhile (deleted by someone else) is the same reason as gone before the action: one key.
		if (code === ErrorCode.NotFound) return host.store.settle(id, { state: 'skipped', reason: 'not_found' }, ['skipped:not_found']);
		if (code === ErrorCode.InvalidState) return host.store.settle(id, { state: 'skipped', reason: code }, [`skipped:${code}`]);
		errors.push({ id, code: code ?? ErrorCode.Internal, message: String((error as Error)?.message ?? error).slice(0, 300) });
		host.store.settle(id, { state: 'failed' }, ['failed']);
	}
}
