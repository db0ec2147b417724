import { sql } from 'drizzle-orm';
import { customType, index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';

/** A column with no type affinity (declared BLOB): SQLite keeps each value as given, text or number. */
const untyped = customType<{ data: string | number; driverData: string | number }>({ dataType: () => 'blob' });

// Every role of WorkflowRunner shares one schema (one migration set); an
// instance uses the instance, step, history, wake-up, event, outbox, event-key,
// dropped-event and deletion tables, an index shard `index_entries` and its metrics
// (`index_metric_minutes`, `index_metric_durations`), a type's delivery
// backlog only `index_backlog`, the `__keys` object only `engine_keys`.

/** The single row of a workflow instance. */
export const instance = sqliteTable('instance', {
	id: text('id').primaryKey(),
	type: text('type').notNull(),
	status: text('status').notNull(),
	payload: text('payload'),
	output: text('output'),
	errorName: text('error_name'),
	errorMessage: text('error_message'),
	errorStack: text('error_stack'),
	errorCode: text('error_code'),
	createdAt: integer('created_at').notNull(),
	updatedAt: integer('updated_at').notNull(),
	version: integer('version').notNull(),
	generation: integer('generation').notNull().default(0),
	/** The registry's code version that created the instance, and the one that last ran it. */
	codeVersion: text('code_version'),
	lastCodeVersion: text('last_code_version'),
	/** The rollback state (engine/steps/rollback-state.ts) as JSON; null until rollbacks begin. */
	rollback: text('rollback'),
	/** The history's running size in bytes through record `history_seq` (the history limit; engine/definition/instance-limits.ts). */
	historyBytes: integer('history_bytes').notNull().default(0),
	historySeq: integer('history_seq').notNull().default(0),
	/** The instance whose step.invoke / step.start created this one (a child workflow). */
	parentId: text('parent_id'),
	/** The search attributes set (engine/index/search-attributes.ts) as sorted JSON; null while none is. */
	attributes: text('attributes'),
	/**
	 * The index entry waiting for its delivery, when a status change writes it into this row
	 * (storage format 2 and up): the outbox's JSON `{entry, attempts, nextAttemptAt,
	 * backloggedSince}`; null when nothing waits. Not part of `InstanceRow`: only the store
	 * reads and writes it (docs/decisions.md "The outbox in the instance row").
	 */
	pending: text('pending'),
});

/**
 * One row per step, keyed by kind and name (see engine/steps/step-key.ts): `seq` is the rowid
 * and `key` has a unique index, so writing a new step's row updates two b-trees (two rows
 * written; docs/decisions.md "A step's records in its row").
 */
export const steps = sqliteTable('steps', {
	/** Order in which steps were first reached (the replay's order); the rowid. */
	seq: integer('seq').primaryKey(),
	key: text('key').notNull(),
	name: text('name').notNull(),
	kind: text('kind').notNull(),
	status: text('status').notNull(),
	attempts: integer('attempts').notNull().default(0),
	/**
	 * History records the row stands for instead of `history` rows (runtime/step-records.ts):
	 * `step.started` (attempt 1, at `started_at`) at history seq `record_seq`, and with
	 * `record_count` 2 also `step.completed` (attempt 1, at `finished_at`, value `result`) at
	 * `record_seq + 1`, both of generation `record_generation`. Null: none (every record of the
	 * step is a `history` row). Written by a step's first write only, never changed after.
	 */
	recordSeq: integer('record_seq'),
	recordCount: integer('record_count'),
	recordGeneration: integer('record_generation'),
	startedAt: integer('started_at'),
	finishedAt: integer('finished_at'),
	wakeAt: integer('wake_at'),
	/** A `sensitive: 'output'` step: its result is shown redacted (engine/definition/sensitive-output.ts). Null in rows written before the column: false. */
	sensitive: integer('sensitive', { mode: 'boolean' }),
	// The values that can be large come last (up to 1 MiB, 8 and 16 KiB), so a scan of the columns above never reads their overflow pages.
	result: text('result'),
	errorName: text('error_name'),
	errorMessage: text('error_message'),
	errorStack: text('error_stack'),
	errorCode: text('error_code'),
});

/**
 * The instance history (engine/history/history.ts): append-only, one row per thing that
 * happened, never rewritten. `seq` orders records over every generation, so
 * the rows of one generation are one contiguous run of it.
 */
export const history = sqliteTable('history', {
	// A rowid alias without AUTOINCREMENT (which costs a sqlite_sequence write per insert):
	// rows are never deleted one by one, so max(seq) + 1 never reuses a number.
	seq: integer('seq').primaryKey(),
	generation: integer('generation').notNull(),
	at: integer('at').notNull(),
	kind: text('kind').notNull(),
	step: text('step'),
	attempt: integer('attempt'),
	/** The record's payload, result or output as stored JSON text. */
	value: text('value'),
	/** The record's other fields as a JSON object. */
	detail: text('detail'),
});

/** Pending wake-ups (sleeps, retry waits, event timeouts); the alarm points at the earliest. */
export const wakeups = sqliteTable(
	'wakeups',
	{
		key: text('key').primaryKey(),
		at: integer('at').notNull(),
	},
	(t) => [index('wakeups_at').on(t.at)],
);

/** Events that arrived before their wait; consumed oldest first. */
export const events = sqliteTable(
	'events',
	{
		seq: integer('seq').primaryKey({ autoIncrement: true }),
		name: text('name').notNull(),
		payload: text('payload'),
		receivedAt: integer('received_at').notNull(),
	},
	(t) => [index('events_name_seq').on(t.name, t.seq)],
);

/** Idempotency keys of event sends, the most recent ones only (see MAX_EVENT_KEYS). */
export const eventKeys = sqliteTable(
	'event_keys',
	{
		seq: integer('seq').primaryKey({ autoIncrement: true }),
		key: text('key').notNull(),
		name: text('name').notNull(),
		digest: text('digest').notNull(),
		at: integer('at').notNull(),
	},
	(t) => [uniqueIndex('event_keys_key').on(t.key)],
);

/**
 * How many buffered events were dropped unconsumed when the instance finished (one row).
 * A table, not an instance column: with ALTER TABLE in the migration that every new object
 * runs, 1000 concurrent creates took 78 s in one run, against 29-51 s without (shared machine).
 */
export const droppedEvents = sqliteTable('dropped_events', {
	slot: integer('slot').primaryKey(),
	count: integer('count').notNull(),
});

/** The pending index update of this instance (at most one row: only the newest matters). */
export const outbox = sqliteTable('outbox', {
	slot: integer('slot').primaryKey(),
	entry: text('entry').notNull(),
	version: integer('version').notNull(),
	attempts: integer('attempts').notNull().default(0),
	nextAttemptAt: integer('next_attempt_at').notNull(),
	/** Set once this instance has registered a failed delivery in its type's backlog; cleared when it deregisters. */
	backloggedSince: integer('backlogged_since'),
});

/**
 * A deletion in progress (at most one row): written with the removal entry in
 * the outbox, it survives a crash until the archive (if asked) is written and
 * the index has acknowledged the removal; then the whole storage goes
 * (`deleteAll`), this row with it.
 */
export const deletion = sqliteTable('deletion', {
	slot: integer('slot').primaryKey(),
	requestedAt: integer('requested_at').notNull(),
	/** `delete`, `retention` or `purge`. */
	reason: text('reason').notNull(),
	/** 1: write the archive record before the storage goes. */
	archive: integer('archive').notNull(),
	/** Set once the archive record is written (the key it was written under). */
	archivedKey: text('archived_key'),
	/** Failed archive attempts, and when the next one is due. */
	attempts: integer('attempts').notNull().default(0),
	nextAttemptAt: integer('next_attempt_at'),
});

/**
 * The children this instance ran inline (engine/children/inline-child.ts), until each is
 * published to its own object: per child, one row per step it wrote (`key` the step's key,
 * `body` the step row as JSON but its result, in `result`) and, once its inline run ended, a header (`key` '', `body` the
 * rest of what it left: instance row, wake-ups, history). A finished child's header has
 * `publish_at`, when its publishing is next tried; a handed-over child's has none (its
 * parent's invoke publishes it).
 */
export const inlineChildren = sqliteTable(
	'inline_children',
	{
		childId: text('child_id').notNull(),
		key: text('key').notNull(),
		body: text('body').notNull(),
		/** A step row's result, kept as the steps table keeps it (not escaped again inside `body`). */
		result: text('result'),
		publishAt: integer('publish_at'),
	},
	(t) => [primaryKey({ columns: [t.childId, t.key] })],
);

/**
 * Index shard rows. `status = '__moved'` is a tombstone left when an entry
 * moves to another shard, so a late, older write cannot bring it back.
 */
export const indexEntries = sqliteTable(
	'index_entries',
	{
		id: text('id').primaryKey(),
		type: text('type').notNull(),
		status: text('status').notNull(),
		createdAt: integer('created_at').notNull(),
		updatedAt: integer('updated_at').notNull(),
		version: integer('version').notNull(),
		/** The code version that created the instance (null: none given). */
		codeVersion: text('code_version'),
		/** The parent of a child workflow (null: none); `GET /workflows?parent=` filters by it. */
		parentId: text('parent_id'),
		/** The entry's search attributes as JSON (null: none); `index_attributes` holds them queryable. */
		attributes: text('attributes'),
		/**
		 * Run metrics this entry's writes counted that the shard has not rolled up into its minute rows yet
		 * (JSON, engine/index/pending-metrics.ts; null: none). Written in the entry's own statement, so
		 * counting a run costs no row (drizzle/0021); not indexed: the rollup reads the entries the shard marked (runtime/index-marked-entries.ts).
		 */
		pendingMetrics: text('pending_metrics'),
		/**
		 * The generation of the run the entry is of (grows on every restart; 0: the first, or a row written before
		 * drizzle/0022): the run metrics count a finish once per generation. Written in the entry's own statement.
		 */
		generation: integer('generation').notNull().default(0),
	},
	// The table is `WITHOUT ROWID`, keyed by the id alone (drizzle/0020, hand-written: drizzle cannot
	// say it): a TEXT primary key of a rowid table is a second b-tree, a row written per new entry.
	// No query may use the rowid. One listing index, `(status, created_at, id)`: created_at is the default
	// order (immutable, so paging is stable). It leads with the status: a listing of every live status
	// walks one per status (`listPlan`), so no status-less index is kept (drizzle/0018). No index leads
	// with updated_at (drizzle/0023 dropped `(status, updated_at, id)`: a row written per delivery, since
	// every delivery moves updated_at): its queries are bounded by created_at instead, as
	// `created_at <= updated_at` (engine/index/updated-bounds.ts; docs/decisions.md "One listing index per shard").
	(t) => [
		index('index_entries_status_created').on(t.status, t.createdAt, t.id),
		// Partial: most instances have no parent, and an entry outside it writes no row of it (a
		// row written is billed); `parent_id = ?` implies the condition, so the listing uses it.
		index('index_entries_parent_created').on(t.parentId, t.createdAt, t.id).where(sql`${t.parentId} IS NOT NULL`),
	],
);

/**
 * An index shard's run metrics, one row per minute (engine/index/run-metrics.ts): counted as
 * entries land, so reading them never counts entries. Kept for 25 hours.
 */
export const indexMetricMinutes = sqliteTable('index_metric_minutes', {
	/** `floor(ms / 60000)`. */
	minute: integer('minute').primaryKey(),
	started: integer('started').notNull().default(0),
	completed: integer('completed').notNull().default(0),
	errored: integer('errored').notNull().default(0),
	terminated: integer('terminated').notNull().default(0),
	/**
	 * The durations of the runs that finished in this minute, as a JSON histogram `{"<bucket>": runs}`
	 * (drizzle/0017): the counters and the histogram of a run are one row written. Minutes recorded
	 * before it keep their histogram in `index_metric_durations`, which reads add in.
	 */
	durations: text('durations'),
	/**
	 * Where the shard's metrics rollup stood after the rollup that wrote this row (ms; null: a row written by a
	 * delivery at once): the newest is the shard's watermark, kept in the rows the rollup writes anyway so that
	 * moving it costs no row of its own (drizzle/0021, runtime/index-metrics-rollup.ts).
	 */
	rolledTo: integer('rolled_to'),
});

/**
 * Run durations (creation to completed or errored) per minute of finishing, as a log-scaled histogram
 * (engine/index/run-metrics.ts), as written before drizzle/0017 (and by a build before it, after a rollback):
 * read, no longer written (`index_metric_minutes.durations` holds them now; its composite key cost each new
 * bucket 2 rows written).
 */
export const indexMetricDurations = sqliteTable(
	'index_metric_durations',
	{
		minute: integer('minute').notNull(),
		bucket: integer('bucket').notNull(),
		runs: integer('runs').notNull().default(0),
	},
	(t) => [primaryKey({ columns: [t.minute, t.bucket] })],
);

/**
 * The search attributes of a shard's live entries, one row per entry and attribute, so each
 * query shape has an index (runtime/index-shard-store.ts): `value` has no type affinity
 * (a keyword stays text, a number a number; booleans are 0/1, datetimes ms), and the entry's
 * `created_at` is copied in so equality on an attribute walks in the default order without
 * sorting. Rewritten with the entry whenever a newer delivery changes them; gone with it.
 */
export const indexAttributes = sqliteTable(
	'index_attributes',
	{
		entryId: text('entry_id').notNull(),
		name: text('name').notNull(),
		value: untyped('value').notNull(),
		createdAt: integer('created_at').notNull(),
	},
	(t) => [primaryKey({ columns: [t.entryId, t.name] }), index('index_attributes_value').on(t.name, t.value, t.createdAt, t.entryId)],
);

/**
 * The delivery backlog of one type (object `__backlog:<type>`): one row per
 * instance whose index delivery has failed and not yet succeeded.
 */
export const indexBacklog = sqliteTable(
	'index_backlog',
	{
		id: text('id').primaryKey(),
		/** When the instance's delivery first failed in this episode. */
		since: integer('since').notNull(),
	},
	(t) => [index('index_backlog_since').on(t.since, t.id)],
);

/**
 * Secrets the engine generates for itself, in the `__keys` object only (for
 * example the key that signs listing cursors when no CURSOR_SECRET is set).
 */
export const engineKeys = sqliteTable('engine_keys', {
	name: text('name').primaryKey(),
	secret: text('secret').notNull(),
});

/**
 * A type's schedule (object `__schedule:<type>`, engine/schedule/schedule-engine.ts): one row with
 * the cron in effect, whether it is paused, the next tick and the last one handled. A tick
 * being started is written in `pendingTick` before its instance is created, so a crash
 * between the two makes the alarm create that same instance (its id comes from the tick).
 */
export const scheduleState = sqliteTable('schedule_state', {
	type: text('type').primaryKey(),
	cron: text('cron').notNull(),
	paused: integer('paused').notNull(),
	nextAt: integer('next_at'),
	lastTickAt: integer('last_tick_at'),
	lastInstanceId: text('last_instance_id'),
	pendingTick: integer('pending_tick'),
	/** Older ticks the pending one stands in for (missed during downtime, not run). */
	pendingMissed: integer('pending_missed').notNull().default(0),
	attempts: integer('attempts').notNull().default(0),
	updatedAt: integer('updated_at').notNull(),
});

/** What each handled tick of a schedule did (the most recent ones only, see MAX_SCHEDULE_RUNS). */
export const scheduleRuns = sqliteTable('schedule_runs', {
	tick: integer('tick').primaryKey(),
	at: integer('at').notNull(),
	/** `started`, `skipped_overlap` or `refused` (see ScheduleOutcome). */
	outcome: text('outcome').notNull(),
	instanceId: text('instance_id'),
	/** Older ticks missed during downtime that this one stood in for. */
	missed: integer('missed').notNull().default(0),
	error: text('error'),
});

/**
 * The concurrency slot of an instance whose type has `static concurrency` (at most one
 * row, engine/limiter/concurrency-slot.ts): the limiter's key and where the slot stands. A
 * request or a release is retried from the alarm until the limiter acknowledges it.
 */
export const concurrencySlot = sqliteTable('concurrency_slot', {
	slot: integer('slot').primaryKey(),
	key: text('key').notNull(),
	/** `requested`, `waiting`, `held` or `releasing`. */
	state: text('state').notNull(),
	attempts: integer('attempts').notNull().default(0),
	nextAttemptAt: integer('next_attempt_at'),
});

/**
 * A limiter's holders and waiters (object `__limit:<type>:<key>`): one row per instance,
 * waiters in arrival order (`seq`). A grant is delivered to the instance until it
 * acknowledges (`notifyAt` null once it has).
 */
export const limiterSlots = sqliteTable(
	'limiter_slots',
	{
		id: text('id').primaryKey(),
		seq: integer('seq').notNull(),
		/** `waiting` or `holding`. */
		state: text('state').notNull(),
		requestedAt: integer('requested_at').notNull(),
		grantedAt: integer('granted_at'),
		notifyAttempts: integer('notify_attempts').notNull().default(0),
		notifyAt: integer('notify_at'),
	},
	(t) => [index('limiter_slots_state_seq').on(t.state, t.seq)],
);

/**
 * A bulk operation (object `__bulk:<id>`, runtime/roles/bulk-role.ts): its one job row (what was
 * asked, where the walk stands, how it ended), one row per instance it reached (written before
 * and after the action, so a resumed job never acts twice), and its counters (kept in the same
 * transaction as the items they count).
 */
export const bulkJob = sqliteTable('bulk_job', {
	slot: integer('slot').primaryKey(),
	spec: text('spec').notNull(),
	state: text('state').notNull(),
	cursor: text('cursor'),
	errors: text('errors').notNull(),
	createdAt: integer('created_at').notNull(),
	updatedAt: integer('updated_at').notNull(),
	finishedAt: integer('finished_at'),
});

export const bulkItems = sqliteTable('bulk_items', {
	id: text('id').primaryKey(),
	state: text('state').notNull(),
	reason: text('reason'),
	/** Unused since a resumed job asks the instance for its receipt (engine/instance/bulk-receipt.ts); kept, since dropping a column is a migration. */
	version: integer('version'),
});

export const bulkCounts = sqliteTable('bulk_counts', {
	counter: text('counter').primaryKey(),
	n: integer('n').notNull(),
});
