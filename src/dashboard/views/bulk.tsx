import type { FC } from 'hono/jsx';
import { EventEditor, type EventShapes } from './event-editor';
import { safeJson } from './safe-json';
import { dashboardHref } from './paths';

/** The actions the list offers on its filter; `sendEvent` only for a type that declares events. */
export const BULK_CHOICES = [
	{ kind: 'terminate', label: 'Terminate', destructive: true },
	{ kind: 'pause', label: 'Pause', destructive: false },
	{ kind: 'resume', label: 'Resume', destructive: false },
	{ kind: 'restart', label: 'Restart', destructive: true },
	{ kind: 'delete', label: 'Delete', destructive: true },
	{ kind: 'sendEvent', label: 'Send an event', destructive: false },
	{ kind: 'reindex', label: 'Re-index', destructive: false },
] as const;

/**
 * The bulk action on the list's filter: the action, its options as the API takes them (terminate's
 * rollback, delete's archive and terminate, restart's step, an event with its payload, checked
 * against the event's JSON Schema as on an instance's page, and an idempotency key), and the
 * button that counts, asks and starts (bulk.js).
 */
export const BulkTools: FC<{ type: string; events: EventShapes }> = ({ type, events }) => (
	<form class="bulk-tools" id="bulk-form" aria-label="Bulk action on this filter">
		<div class="bulk-row">
			<label for="bulk-action" class="bulk-label">Bulk action</label>
			<select id="bulk-action" name="kind">
				{BULK_CHOICES.filter((c) => c.kind !== 'sendEvent' || events.length > 0).map((c) => (
					<option value={c.kind}>{c.label}</option>
				))}
			</select>
			<button type="button" id="bulk-start" title={`Counts what this filter matches, asks, then acts on every matching ${type} instance (all pages)`}>
				Apply to all matching…
			</button>
			<span class="muted" id="bulk-tools-note" role="status" aria-live="polite"></span>
		</div>
		<fieldset class="bulk-options" data-for="terminate" hidden>
			<legend>Terminate options</legend>
			<label class="check">
				<input type="checkbox" name="rollback" /> Run each instance's rollbacks (compensations) first
			</label>
		</fieldset>
		<fieldset class="bulk-options" data-for="restart" hidden>
			<legend>Restart options</legend>
			<label>
				<span>From step (optional)</span>
				<input name="from" autocomplete="off" spellcheck={false} placeholder="a step name; empty: from the beginning" />
			</label>
		</fieldset>
		<fieldset class="bulk-options" data-for="delete" hidden>
			<legend>Delete options</legend>
			<label class="check">
				<input type="checkbox" name="terminate" /> Terminate unfinished instances first (otherwise they are skipped)
			</label>
			<label class="check">
				<input type="checkbox" name="archive" /> Archive each first (needs the ARCHIVE bucket)
			</label>
		</fieldset>
		{events.length ? (
			<fieldset class="bulk-options event-form" data-for="sendEvent" hidden>
				<legend>The event</legend>
				<EventEditor prefix="bulk-event" events={events} keyHint="default: bulk:<job id>" />
				<script type="application/json" id="bulk-events" dangerouslySetInnerHTML={{ __html: safeJson(events) }} />
			</fieldset>
		) : null}
	</form>
);

/** A bulk job's progress (filled and followed by bulk.js): on the list once started, and on the job's own page. */
export const BulkProgressCard: FC<{ id?: string; hidden?: boolean }> = ({ id, hidden }) => (
	<section class="card bulk-progress" id="bulk-progress" aria-label="Bulk operation" data-job={id ?? ''} hidden={hidden}>
		<h2>
			<span id="bulk-title">Bulk operation</span> <span class="badge" id="bulk-state" data-state=""></span>
		</h2>
		<div
			class="bar"
			id="bulk-bar"
			role="progressbar"
			aria-label="Instances handled of those matched"
			aria-valuemin={0}
			aria-valuemax={0}
			aria-valuenow={0}
		>
			<span class="done" data-part="done"></span>
			<span class="skipped" data-part="skipped"></span>
			<span class="failed" data-part="failed"></span>
		</div>
		<dl>
			<div><dt>Matched</dt><dd data-count="matched">0</dd></div>
			<div><dt>Done</dt><dd data-count="done">0</dd></div>
			<div><dt>Skipped</dt><dd data-count="skipped">0</dd></div>
			<div><dt>Failed</dt><dd data-count="failed">0</dd></div>
		</dl>
		<ul class="reasons" id="bulk-reasons" aria-label="Skipped, per reason"></ul>
		<ul class="reasons" id="bulk-errors" aria-label="Last failures"></ul>
		<div class="actions">
			<button type="button" class="danger" id="bulk-cancel" hidden>Cancel the operation</button>
			{id ? null : <a id="bulk-link" class="button" hidden>Job page</a>}
		</div>
		<p class="muted" id="bulk-note" role="status" aria-live="polite"></p>
	</section>
);

/** `/dashboard/bulk/:id`: one job's progress, live until it ends, with Cancel. */
export const BulkPage: FC<{ id: string }> = ({ id }) => (
	<>
		<div class="page-head">
			<h1>Bulk operation</h1>
			<span class="mono muted">{id}</span>
		</div>
		<BulkProgressCard id={id} />
		<script type="application/json" id="bulk-config" dangerouslySetInnerHTML={{ __html: safeJson({ job: id }) }} />
		<script type="module" src={dashboardHref('/bulk.js')}></script>
	</>
);
