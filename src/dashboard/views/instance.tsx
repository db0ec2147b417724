import type { FC } from 'hono/jsx';
import { groupOfId, jurisdictionOfId } from '../group-of-id';
import type { TypeSchemas } from '../../engine/definition/type-schemas';
import type { WorkflowStatusInfo } from '../../engine/definition/types';
import type { ListItem } from './list';
import { safeJson } from './safe-json';
import { JsonBlock, StatusBadge, Time } from './layout';
import { ConfirmDialog } from './confirm-dialog';
import { EventEditor } from './event-editor';
import { dashboardHref, instanceHref } from './paths';

/** What `GET /workflows/:id` answers (the same type the engine builds), plus the archive flag. */
export type InstanceDetail = WorkflowStatusInfo & {
	/** Deleted, and answered from the R2 archive: read-only. */
	archived?: boolean;
};

/** A child workflow in the tree of an instance's children, with its own children (a few levels deep). */
export interface ChildNode {
	item: ListItem;
	children: ChildNode[];
	/** More children exist than were read (the list link shows them all). */
	more: boolean;
}

/** What the instance page is given besides the instance. */
export interface InstanceExtras {
	/** The tree of child workflows (from `GET /workflows?parent=`); null when it could not be read. */
	children: { nodes: ChildNode[]; more: boolean } | null;
	/** An archive bucket is bound: a delete can archive the history first. */
	archiveBound: boolean;
}

const CONTROLS = [
	{ action: 'pause', label: 'Pause', confirm: 'Pause this instance? A step in flight finishes first; nothing else runs until it is resumed.' },
	{ action: 'resume', label: 'Resume', confirm: 'Resume this instance? A paused one goes on from where it was; a diverged one replays with the code deployed now.' },
	{ action: 'terminate', label: 'Terminate', confirm: 'Terminate this instance? It stops for good, pending wake-ups are cancelled and further events are refused.', danger: true },
	{ action: 'restart', label: 'Restart', confirm: 'Restart this instance? A new run begins, from the start or from a step you choose; the history keeps the earlier run.', danger: true },
] as const;

/** An attribute's value, linked to the list of the type's instances with the same value; "not set" when it has none. */
const AttributeValueLink: FC<{ type: string; name: string; kind: string; value: string | number | boolean | undefined }> = ({ type, name, kind, value }) =>
	value === undefined ? (
		<span class="muted">not set</span>
	) : (
		<a href={dashboardHref(`/instances?${new URLSearchParams({ type, [`attr.${name}`]: String(value) })}`)} title={`Instances of ${type} with ${name} = ${String(value)}`}>
			{kind === 'datetime' ? <Time ms={Number(value)} /> : kind === 'boolean' ? (value ? 'yes' : 'no') : String(value)}
		</a>
	);

export const InstancePage: FC<{ detail: InstanceDetail; schemas: TypeSchemas | undefined; extras: InstanceExtras }> = ({ detail, schemas, extras }) => {
	const events = schemas?.events ?? [];
	const runs = Array.from({ length: (detail.generation ?? 0) + 1 }, (_, i) => i).reverse();
	return (
		<>
			<div class="page-head instance-head">
				<div>
					<p class="crumbs">
						<a href={dashboardHref('/instances')}>Instances</a> / <a href={dashboardHref(`/instances?type=${encodeURIComponent(detail.type)}`)}>{detail.type}</a>
					</p>
					<h1 class="mono">{detail.id}</h1>
					{detail.parentId ? (
						<p class="parent-link" id="parent-link">
							Child workflow of <a href={instanceHref(detail.parentId)} class="mono">{detail.parentId}</a>
						</p>
					) : null}
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
					{groupOfId(detail.id) ? <div><dt>Group</dt><dd id="group">{groupOfId(detail.id)}{jurisdictionOfId(detail.id) ? ` · jurisdiction ${jurisdictionOfId(detail.id)}` : ''}</dd></div> : null}
					<div><dt>Created</dt><dd><Time ms={detail.createdAt} /></dd></div>
					<div><dt>Updated</dt><dd id="updated-at"><Time ms={detail.updatedAt} /></dd></div>
					<div><dt>Code version</dt><dd id="code-version">{codeVersionText(detail)}</dd></div>
					<div>
						<dt title="How many times this instance was restarted; each restart begins a new run, and the earlier runs stay in the history">Restarts</dt>
						<dd id="generation">{detail.generation ?? 0}</dd>
					</div>
					<div>
						<dt title="How many times its status changed (the version its index entry carries)">Status changes</dt>
						<dd id="version">{detail.version}</dd>
					</div>
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
					<button
						type="button"
						class="danger"
						data-action="delete"
						data-confirm={`Delete ${detail.id}? Its storage, alarm and index entry go; the id can be created again.${extras.archiveBound ? ' Archived first, its history stays readable here (read-only).' : ' Nothing is archived (no archive bucket is bound): its history is gone for good.'}`}
						data-archive={extras.archiveBound ? 'bound' : 'none'}
					>
						Delete
					</button>
				</div>
				<div id="control-result" role="status" aria-live="polite"></div>
			</section>
			{Object.keys(schemas?.attributes ?? {}).length || Object.keys(detail.attributes ?? {}).length ? (
				<section class="card attributes-card" aria-label="Search attributes" id="attributes-card">
					<h2>Search attributes</h2>
					<dl id="attributes">
						{[...Object.entries(schemas?.attributes ?? {}), ...Object.keys(detail.attributes ?? {}).filter((n) => !(n in (schemas?.attributes ?? {}))).map((n) => [n, 'keyword'] as const)].map(([name, kind]) => (
							<div data-attr={name} data-kind={kind}>
								<dt>{name}</dt>
								<dd><AttributeValueLink type={detail.type} name={name} kind={kind} value={detail.attributes?.[name]} /></dd>
							</div>
						))}
					</dl>
				</section>
			) : null}
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
			{extras.children && extras.children.nodes.length > 0 ? (
				<section class="card" aria-label="Child workflows" id="children">
					<div class="section-head">
						<h2>Child workflows</h2>
						<a href={dashboardHref(`/instances?parent=${encodeURIComponent(detail.id)}`)}>All children in the list</a>
					</div>
					<ChildTree nodes={extras.children.nodes} more={extras.children.more} parentId={detail.id} />
				</section>
			) : null}
			<section class="card" aria-label="Timeline">
				<div class="section-head">
					<h2>Timeline</h2>
					<span class="legend">
						<span><i class="seg attempt ok" /> step</span> <span><i class="seg attempt failed" /> failed attempt</span> <span><i class="seg attempt interrupted cancelled" /> cancelled by a terminate</span> <span><i class="seg retry" /> retry wait</span>{' '}
						<span><i class="seg sleep" /> sleep</span> <span><i class="seg wait" /> event wait</span> <span><b class="mark-key">‖</b> paused</span>{' '}
						<span><b class="mark-key">▶</b> resumed</span> <span><b class="mark-key">✉</b> event received</span> <span><b class="mark-key">↻</b> restarted</span>{' '}
						<span><b class="mark-key">■</b> finished</span>
					</span>
				</div>
				<p class="muted small tl-hint">
					Tap or focus a row for its attempts and times. <strong id="timeline-run" hidden></strong>
				</p>
				<div id="timeline" class="timeline" aria-live="polite">
					<p class="muted">Loading the history…</p>
				</div>
			</section>
			<section class="card" id="messages-card" aria-label="Messages" hidden>
				<div class="section-head">
					<h2>Messages</h2>
					<span class="muted" id="messages-count"></span>
				</div>
				<table class="history" id="messages">
					<thead>
						<tr>
							<th scope="col">#</th>
							<th scope="col">Time</th>
							<th scope="col">Topic</th>
							<th scope="col">Data</th>
						</tr>
					</thead>
					<tbody></tbody>
				</table>
			</section>
			<section class="card" id="event-card" aria-label="Send an event" hidden={detail.archived === true || ['completed', 'errored', 'terminated'].includes(detail.status)}>
				<h2>Send an event</h2>
				<p id="event-closed" class="muted" hidden>This instance has finished: it takes no more events (a restart opens it again).</p>
				{events.length === 0 ? (
					<p class="muted">The type <code>{detail.type}</code> declares no events.</p>
				) : (
					<form id="event-form" class="event-form">
						<EventEditor prefix="event" events={events}>
							<div class="actions">
								<button type="submit" class="primary">Send event</button>
							</div>
							<div id="event-result" role="status" aria-live="polite"></div>
						</EventEditor>
					</form>
				)}
			</section>
			<section class="card" aria-label="History">
				<div class="section-head">
					<h2>History</h2>
					<label class="run-picker" hidden={runs.length < 2}>
						<span>Run</span>
						<select id="run-select">
							{runs.map((g) => (
								<option value={g === detail.generation ? '' : String(g)}>{runLabel(g, detail.generation ?? 0)}</option>
							))}
						</select>
					</label>
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
			<ConfirmDialog />
			<script type="application/json" id="instance-config" dangerouslySetInnerHTML={{ __html: safeJson({ id: detail.id, type: detail.type, status: detail.status, generation: detail.generation ?? 0, events, archiveBound: extras.archiveBound }) }} />
			<script type="module" src={dashboardHref('/instance.js')}></script>
		</>
	);
};

/** The code version that started the instance, and the one that last ran it when a deploy changed it. */
function codeVersionText(detail: { codeVersion?: string; lastCodeVersion?: string }): string {
	if (!detail.codeVersion && !detail.lastCodeVersion) return 'not labelled';
	if (detail.lastCodeVersion && detail.lastCodeVersion !== detail.codeVersion) return `${detail.codeVersion ?? 'not labelled'} → ${detail.lastCodeVersion}`;
	return detail.codeVersion!;
}

/** "Run 3 (now)", "Run 1 (the first)": runs counted from 1 for people; the API's `generation` counts from 0. */
export function runLabel(generation: number, current: number): string {
	const n = `Run ${generation + 1}`;
	if (generation === current) return `${n} (current)`;
	return generation === 0 ? `${n} (the first)` : n;
}

/** A parent's children, each with its status and its own children, as nested lists. */
const ChildTree: FC<{ nodes: ChildNode[]; more: boolean; parentId: string }> = ({ nodes, more, parentId }) => (
	<ul class="tree">
		{nodes.map((node) => (
			<li data-child={node.item.id}>
				<span class="tree-item">
					<StatusBadge status={node.item.status} /> <a href={instanceHref(node.item.id)} class="mono">{node.item.id}</a> <span class="muted">{node.item.type}</span>
				</span>
				{node.children.length ? <ChildTree nodes={node.children} more={node.more} parentId={node.item.id} /> : null}
			</li>
		))}
		{more ? (
			<li class="muted">
				<a href={dashboardHref(`/instances?parent=${encodeURIComponent(parentId)}`)}>more children…</a>
			</li>
		) : null}
	</ul>
);
