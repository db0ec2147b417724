import type { FC } from 'hono/jsx';
import { safeJson } from './list';
import { dashboardHref } from './paths';

/** The actions the list offers on its filter (a `sendEvent` needs a payload: the API and client take it). */
export const BULK_CHOICES = [
	{ kind: 'terminate', label: 'Terminate', destructive: true },
	{ kind: 'pause', label: 'Pause', destructive: false },
	{ kind: 'resume', label: 'Resume', destructive: false },
	{ kind: 'restart', label: 'Restart', destructive: true },
	{ kind: 'delete', label: 'Delete', destructive: true },
	{ kind: 'reindex', label: 'Re-index', destructive: false },
] as const;

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
