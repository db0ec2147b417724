import type { FC } from 'hono/jsx';
import type { TypeSchemas } from '../../engine/type-schemas';
import type { WorkflowStatusInfo } from '../../engine/types';
import { safeJson } from './list';
import { JsonBlock, StatusBadge, Time } from './layout';

/** What `GET /workflows/:id` answers (the same type the engine builds), plus the archive flag. */
export type InstanceDetail = WorkflowStatusInfo & {
	/** Deleted, and answered from the R2 archive: read-only. */
	archived?: boolean;
};

const CONTROLS = [
	{ action: 'pause', label: 'Pause', confirm: 'Pause this instance? A step in flight finishes first; nothing else runs until it is resumed.' },
	{ action: 'resume', label: 'Resume', confirm: 'Resume this instance? A paused one goes on from where it was; a diverged one replays with the code deployed now.' },
	{ action: 'terminate', label: 'Terminate', confirm: 'Terminate this instance? It stops for good, pending wake-ups are cancelled and further events are refused.', danger: true },
	{ action: 'restart', label: 'Restart', confirm: 'Restart this instance from the start? Its step results are discarded (the history keeps the earlier run).', danger: true },
] as const;

export const InstancePage: FC<{ detail: InstanceDetail; schemas: TypeSchemas | undefined }> = ({ detail, schemas }) => {
	const events = schemas?.events ?? [];
	return (
		<>
			<div class="page-head instance-head">
				<div>
					<p class="crumbs">
						<a href="/dashboard/instances">Instances</a> / <a href={`/dashboard/instances?type=${encodeURIComponent(detail.type)}`}>{detail.type}</a>
					</p>
					<h1 class="mono">{detail.id}</h1>
				</div>
				<span>
					<span id="instance-status">
						<StatusBadge status={detail.status} />
					</span>
					{detail.archived ? <span class="badge archived-badge" title="Deleted; this is its archived record">archived</span> : null}
				</span>
			</div>
			<section class="card facts" aria-label="Summary">
				<dl>
					<div><dt>Type</dt><dd>{detail.type}</dd></div>
					<div><dt>Created</dt><dd><Time ms={detail.createdAt} /></dd></div>
					<div><dt>Updated</dt><dd id="updated-at"><Time ms={detail.updatedAt} /></dd></div>
					<div><dt>Code version</dt><dd id="code-version">{codeVersionText(detail)}</dd></div>
					<div><dt>Run</dt><dd id="generation">{detail.generation ?? 0}</dd></div>
					<div><dt>Changes</dt><dd id="version">{detail.version}</dd></div>
					<div><dt>Steps</dt><dd id="step-counts">{detail.stepCounts.total ?? 0}</dd></div>
					<div><dt>Buffered events</dt><dd id="buffered">{detail.bufferedEvents}</dd></div>
					<div><dt>Dropped events</dt><dd>{detail.droppedEvents}</dd></div>
				</dl>
				{detail.archived ? (
					<p class="muted">This instance was deleted; what you see is its archived record (read-only). A new instance under this id starts fresh.</p>
				) : null}
				<div class="controls" role="group" aria-label="Controls" hidden={detail.archived === true}>
					{CONTROLS.map((c) => (
						<button type="button" class={'danger' in c ? 'danger' : ''} data-action={c.action} data-confirm={c.confirm}>
							{c.label}
						</button>
					))}
				</div>
				<div id="control-result" role="status" aria-live="polite"></div>
			</section>
			<div class="two-col">
				<section class="card" aria-label="Payload">
					<h2>Payload</h2>
					<JsonBlock value={detail.payload} label="payload" />
				</section>
				<section class="card" aria-label="Result" id="result">
					<h2>Result</h2>
					{detail.error ? (
						<div class="error-box">
							<strong>{detail.error.code ?? detail.error.name}</strong>: {detail.error.message}
							{detail.error.stack ? <JsonBlock value={detail.error.stack} label="stack" open={false} /> : null}
						</div>
					) : detail.output !== undefined ? (
						<JsonBlock value={detail.output} label="output" />
					) : (
						<p class="muted">No output yet.</p>
					)}
				</section>
			</div>
			<section class="card" aria-label="Timeline">
				<div class="section-head">
					<h2>Timeline</h2>
					<span class="legend">
						<i class="seg attempt ok" /> step <i class="seg attempt failed" /> failed attempt <i class="seg retry" /> retry wait <i class="seg sleep" /> sleep{' '}
						<i class="seg wait" /> event wait
					</span>
				</div>
				<div id="timeline" class="timeline" aria-live="polite">
					<p class="muted">Loading the history…</p>
				</div>
			</section>
			<section class="card" id="event-card" aria-label="Send an event" hidden={detail.archived === true || ['completed', 'errored', 'terminated'].includes(detail.status)}>
				<h2>Send an event</h2>
				<p id="event-closed" class="muted" hidden>This instance has finished: it takes no more events (a restart opens it again).</p>
				{events.length === 0 ? (
					<p class="muted">The type <code>{detail.type}</code> declares no events.</p>
				) : (
					<form id="event-form" class="event-form">
						<div class="event-fields">
							<label>
								<span>Event</span>
								<select name="event" id="event-name">
									{events.map((e) => (
										<option value={e.name}>{e.name}</option>
									))}
								</select>
							</label>
							<label>
								<span>Idempotency key (optional)</span>
								<input name="idempotencyKey" autocomplete="off" />
							</label>
							<label class="grow">
								<span>Payload (JSON)</span>
								<textarea name="payload" id="event-payload" rows={6} spellcheck={false} class="mono"></textarea>
							</label>
							<div class="actions">
								<button type="submit" class="primary">Send event</button>
							</div>
							<div id="event-result" role="status" aria-live="polite"></div>
						</div>
						<div class="event-shape">
							<span class="label">Expected shape</span>
							<p id="event-note" class="muted"></p>
							<pre id="event-schema" class="mono"></pre>
						</div>
					</form>
				)}
			</section>
			<section class="card" aria-label="History">
				<div class="section-head">
					<h2>History</h2>
					<span class="muted" id="history-count"></span>
				</div>
				<table class="history" id="history">
					<thead>
						<tr>
							<th scope="col">#</th>
							<th scope="col">Time</th>
							<th scope="col">Kind</th>
							<th scope="col">Step / event</th>
							<th scope="col">Details</th>
						</tr>
					</thead>
					<tbody></tbody>
				</table>
			</section>
			<dialog id="confirm" aria-labelledby="confirm-title">
				<form method="dialog">
					<h2 id="confirm-title">Are you sure?</h2>
					<p id="confirm-text"></p>
					<div class="actions">
						<button value="cancel" type="submit" id="confirm-cancel">Cancel</button>
						<button value="ok" type="submit" class="primary" id="confirm-ok">Confirm</button>
					</div>
				</form>
			</dialog>
			<script type="application/json" id="instance-config" dangerouslySetInnerHTML={{ __html: safeJson({ id: detail.id, type: detail.type, status: detail.status, events }) }} />
			<script type="module" src="/dashboard/instance.js"></script>
		</>
	);
};

/** The code version that started the instance, and the one that last ran it when a deploy changed it. */
function codeVersionText(detail: { codeVersion?: string; lastCodeVersion?: string }): string {
	if (!detail.codeVersion && !detail.lastCodeVersion) return 'not labelled';
	if (detail.lastCodeVersion && detail.lastCodeVersion !== detail.codeVersion) return `${detail.codeVersion ?? 'not labelled'} → ${detail.lastCodeVersion}`;
	return detail.codeVersion!;
}
