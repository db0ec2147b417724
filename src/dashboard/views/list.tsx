import type { FC } from 'hono/jsx';
import { WORKFLOW_STATUSES } from '../../engine/types';
import { ErrorBanner, StatusBadge, Time } from './layout';

export interface ListItem {
	id: string;
	type: string;
	status: string;
	createdAt: number;
	updatedAt: number;
}

/** The list's filters, as the page's query string carries them (bounds in ms since the epoch). */
export interface ListFilter {
	type?: string;
	status: string[];
	createdAfter?: string;
	createdBefore?: string;
	updatedAfter?: string;
	updatedBefore?: string;
	id?: string;
	order: 'created' | 'updated';
	limit: number;
	cursor?: string;
	/**
	 * Query parameters the page could not read as they are (`order=sideways`, `limit=lots`): sent
	 * to the list API verbatim, so the page shows the API's own 400 instead of ignoring them.
	 */
	unchecked?: { order?: string; limit?: string };
}

/** What the live script needs: the filter, the shards to watch, and whether new rows may be inserted (first page only). */
/** Rows a list page shows unless `limit` says otherwise. */
export const DEFAULT_PAGE_SIZE = 50;

export interface ListConfig {
	filter: ListFilter;
	shards: Record<string, number>;
	firstPage: boolean;
	/** The API refused the query: the page stays as rendered (the error, no rows), with no live feed that could fill in another list. */
	refused?: boolean;
}

export const Row: FC<{ item: ListItem }> = ({ item }) => (
	<tr data-id={item.id} data-created={String(item.createdAt)} data-updated={String(item.updatedAt)} data-status={item.status}>
		<td class="id">
			<a href={`/dashboard/instances/${encodeURIComponent(item.id)}`} data-field="link">
				<span data-field="id">{item.id}</span>
			</a>
		</td>
		<td data-field="type">{item.type}</td>
		<td>
			<StatusBadge status={item.status} />
		</td>
		<td>
			<Time ms={item.createdAt} field="createdAt" />
		</td>
		<td>
			<Time ms={item.updatedAt} field="updatedAt" />
		</td>
	</tr>
);

const DateRange: FC<{ label: string; after: string; before: string; filter: ListFilter }> = ({ label, after, before, filter }) => (
	<fieldset class="range">
		<legend>{label}</legend>
		{[after, before].map((name) => (
			<label>
				<span>{name.endsWith('After') ? 'from' : 'to'}</span>
				<input type="datetime-local" step="1" data-ms-for={name} aria-label={`${label} ${name.endsWith('After') ? 'from' : 'to'}`} />
				<input type="hidden" name={name} value={(filter as unknown as Record<string, string | undefined>)[name] ?? ''} />
			</label>
		))}
	</fieldset>
);

export const InstanceList: FC<{
	types: string[];
	filter: ListFilter;
	items: ListItem[];
	nextCursor: string | null;
	error?: { code: string; message: string } | undefined;
	config: ListConfig;
}> = ({ types, filter, items, nextCursor, error, config }) => {
	const query = (extra: Record<string, string>) => {
		const q = new URLSearchParams();
		if (filter.type) q.set('type', filter.type);
		for (const s of filter.status) q.append('status', s);
		for (const key of ['createdAfter', 'createdBefore', 'updatedAfter', 'updatedBefore', 'id'] as const) if (filter[key]) q.set(key, filter[key]!);
		if (filter.order !== 'created') q.set('order', filter.order);
		// The page size travels with the page: Next shows as many rows as this page asked for.
		if (filter.limit !== DEFAULT_PAGE_SIZE) q.set('limit', String(filter.limit));
		for (const [k, v] of Object.entries(extra)) q.set(k, v);
		return `/dashboard/instances?${q}`;
	};
	return (
		<>
			<div class="page-head">
				<h1>Instances</h1>
				<span id="live" class="live" data-state="connecting" role="status" aria-live="polite">
					connecting…
				</span>
			</div>
			<form class="filters card" method="get" action="/dashboard/instances" id="filters">
				<label>
					<span>Type</span>
					<select name="type">
						<option value="">All types</option>
						{types.map((t) => (
							<option value={t} selected={t === filter.type}>{t}</option>
						))}
					</select>
				</label>
				<fieldset class="statuses">
					<legend>Status</legend>
					{WORKFLOW_STATUSES.map((s) => (
						<label class={`chip status-${s}`}>
							<input type="checkbox" name="status" value={s} checked={filter.status.includes(s)} /> {s}
						</label>
					))}
				</fieldset>
				<DateRange label="Created" after="createdAfter" before="createdBefore" filter={filter} />
				<DateRange label="Updated" after="updatedAfter" before="updatedBefore" filter={filter} />
				<label>
					<span>Instance id</span>
					<input type="search" name="id" value={filter.id ?? ''} placeholder="exact id" autocomplete="off" spellcheck={false} />
				</label>
				<label>
					<span>Order</span>
					<select name="order">
						<option value="created" selected={filter.order === 'created'}>Newest created</option>
						<option value="updated" selected={filter.order === 'updated'}>Recently updated</option>
					</select>
				</label>
				<div class="actions">
					<button type="submit" class="primary">Apply</button>
					<a href="/dashboard/instances" class="button">Reset</a>
				</div>
			</form>
			{error ? <ErrorBanner code={error.code} message={error.message} /> : null}
			<div class="card table-card">
				<table class="instances" id="instances">
					<thead>
						<tr>
							<th scope="col">Instance</th>
							<th scope="col">Type</th>
							<th scope="col">Status</th>
							<th scope="col">Created</th>
							<th scope="col">Updated</th>
						</tr>
					</thead>
					<tbody>
						{items.map((item) => (
							<Row item={item} />
						))}
					</tbody>
				</table>
				<div class="empty" id="empty" hidden={items.length > 0}>
					{error ? 'Fix the filter above to see instances.' : 'No instances match this filter yet. New ones appear here as they are created.'}
				</div>
			</div>
			<nav class="pager" aria-label="Pages">
				{filter.cursor ? <a href={query({})} class="button">← First page</a> : <span />}
				{nextCursor ? <a href={query({ cursor: nextCursor })} class="button" rel="next">Next page →</a> : null}
			</nav>
			<template id="row-template">
				<Row item={{ id: '', type: '', status: 'created', createdAt: 0, updatedAt: 0 }} />
			</template>
			<script type="application/json" id="list-config" dangerouslySetInnerHTML={{ __html: safeJson(config) }} />
			<script type="module" src="/dashboard/list.js"></script>
		</>
	);
};

/** JSON that is safe inside a `<script>` element. */
export function safeJson(value: unknown): string {
	return JSON.stringify(value).replace(/</g, '\\u003c');
}
