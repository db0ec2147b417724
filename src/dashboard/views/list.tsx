import type { FC } from 'hono/jsx';
import type { AttributeDeclaration, AttributeKind } from '../../engine/index/search-attributes';
import { WORKFLOW_STATUSES } from '../../engine/support/statuses';
import { BulkProgressCard, BulkTools } from './bulk';
import type { EventShapes } from './event-editor';
import { ConfirmDialog } from './confirm-dialog';
import { ErrorBanner, StatusBadge, Time } from './layout';
import { dashboardHref, instanceHref } from './paths';
import { safeJson } from './safe-json';

export interface ListItem {
	id: string;
	type: string;
	status: string;
	createdAt: number;
	updatedAt: number;
	codeVersion?: string;
	parentId?: string;
	/** Search attributes (a datetime as ms since the epoch). */
	attributes?: Record<string, string | number | boolean>;
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
	/** Only ids that start with this. */
	idPrefix?: string;
	/** Search-attribute conditions as the list API's query parameters: `['attr.amount.gte', '100']`; a repeated name is "any of". */
	attributes: [string, string][];
	/** Only instances created by this code version (the registry's `version`). */
	codeVersion?: string;
	/** Only the children of this instance. */
	parent?: string;
	/** The group whose index is listed (docs/residency.md); absent: the default group. */
	group?: string;
	/** `attr.<name>` / `-attr.<name>`: by a search attribute, ascending / descending. */
	order: 'created' | 'updated' | `attr.${string}` | `-attr.${string}`;
	limit: number;
	cursor?: string;
	/**
	 * Query parameters the page does not own or could not read as they are (`order=sideways`,
	 * `limit=lots`, `stauts=waiting`, `attr.__proto__=x`, `attr.amount.eq=5`), as `[name, value]`:
	 * sent to the list API verbatim, so the page shows the API's own 400 and no rows instead of
	 * ignoring them (and listing, or acting on, more than was asked).
	 */
	unchecked?: [string, string][];
}

/** What the live script needs: the filter, the shards to watch, and whether new rows may be inserted (first page only). */
/** Rows a list page shows unless `limit` says otherwise. */
export const DEFAULT_PAGE_SIZE = 50;

export interface ListConfig {
	filter: ListFilter;
	shards: Record<string, number>;
	/** The listed type's search attributes (to hold live entries to the filter's attribute conditions). */
	declared: AttributeDeclaration;
	firstPage: boolean;
	/** The API refused the query: the page stays as rendered (the error, no rows), with no live feed that could fill in another list. */
	refused?: boolean;
}

/** The list's optional columns, in table order; the operator picks which show (kept in the browser: list.js). */
export const COLUMNS = [
	{ key: 'type', label: 'Type' },
	{ key: 'status', label: 'Status' },
	{ key: 'codeVersion', label: 'Code version' },
	{ key: 'parent', label: 'Parent' },
	{ key: 'createdAt', label: 'Created' },
	{ key: 'updatedAt', label: 'Updated' },
] as const;
/** Shown until the operator chooses. */
export const DEFAULT_COLUMNS = ['type', 'status', 'createdAt', 'updatedAt'];
/** A type's first attributes show as columns until the operator chooses (per type, in the browser). */
export const DEFAULT_ATTRIBUTE_COLUMNS = 3;

/** A search attribute's value as a cell shows it. */
const AttributeValue: FC<{ kind: AttributeKind; value: string | number | boolean | undefined }> = ({ kind, value }) =>
	value === undefined ? <span class="muted" data-empty>—</span> : kind === 'datetime' ? <Time ms={Number(value)} /> : kind === 'boolean' ? <>{value ? 'yes' : 'no'}</> : <>{String(value)}</>;

export const Row: FC<{ item: ListItem; declared?: AttributeDeclaration }> = ({ item, declared = {} }) => (
	<tr data-id={item.id} data-created={String(item.createdAt)} data-updated={String(item.updatedAt)} data-status={item.status}>
		<td class="id" data-col="id">
			<a href={instanceHref(item.id)} data-field="link">
				<span data-field="id">{item.id}</span>
			</a>
		</td>
		<td data-field="type" data-col="type">{item.type}</td>
		<td data-col="status">
			<StatusBadge status={item.status} />
		</td>
		<td data-col="codeVersion" data-field="codeVersion" class="mono">{item.codeVersion ?? ''}</td>
		<td data-col="parent" class="id">
			<a href={item.parentId ? instanceHref(item.parentId) : undefined} data-field="parent" hidden={!item.parentId}>{item.parentId ?? ''}</a>
		</td>
		<td data-col="createdAt">
			<Time ms={item.createdAt} field="createdAt" />
		</td>
		<td data-col="updatedAt">
			<Time ms={item.updatedAt} field="updatedAt" />
		</td>
		{Object.entries(declared).map(([name, kind]) => (
			<td data-col={`attr-${name}`} data-attr={name} data-kind={kind} class={kind === 'number' ? 'num' : kind === 'keyword' ? 'mono' : ''}>
				<AttributeValue kind={kind} value={item.attributes?.[name]} />
			</td>
		))}
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

/** The filter's inputs for one declared attribute: a keyword takes one value or several (any of), a number or a datetime a range, a boolean yes/no. */
const AttributeInputs: FC<{ name: string; kind: AttributeKind; filter: ListFilter }> = ({ name, kind, filter }) => {
	const values = (param: string) => filter.attributes.filter(([n]) => n === param).map(([, v]) => v);
	const one = (param: string) => values(param)[0] ?? '';
	if (kind === 'keyword')
		return (
			<label>
				<span>{name}</span>
				<input type="search" name={`attr.${name}`} data-any-of value={values(`attr.${name}`).join(', ')} placeholder="value, or a, b (any of)" autocomplete="off" spellcheck={false} />
			</label>
		);
	if (kind === 'boolean')
		return (
			<label>
				<span>{name}</span>
				<select name={`attr.${name}`}>
					<option value="">any</option>
					<option value="true" selected={one(`attr.${name}`) === 'true'}>yes</option>
					<option value="false" selected={one(`attr.${name}`) === 'false'}>no</option>
				</select>
			</label>
		);
	return (
		<fieldset class="range">
			<legend>{name}</legend>
			{(['gte', 'lte'] as const).map((bound) => {
				const label = bound === 'gte' ? 'from' : 'to';
				const param = `attr.${name}.${bound}`;
				return kind === 'number' ? (
					<label>
						<span>{label}</span>
						<input type="number" step="any" name={param} value={one(param)} aria-label={`${name} ${label}`} class="attr-number" />
					</label>
				) : (
					<label>
						<span>{label}</span>
						<input type="datetime-local" step="1" data-ms-for={param} aria-label={`${name} ${label}`} />
						<input type="hidden" name={param} value={one(param)} />
					</label>
				);
			})}
		</fieldset>
	);
};

/** Which group's index the page lists, and where it lives (each group's index is read in its own jurisdiction). */
const GroupBadge: FC<{ groups: { name: string; jurisdiction: string | null }[]; name: string | undefined }> = ({ groups, name }) => {
	const group = groups.find((g) => g.name === name) ?? groups[0]!;
	return (
		<span class="group-badge" id="group-badge" title="Each group's instances are listed from its own index, in its jurisdiction">
			group <strong>{group.name}</strong>
			{group.jurisdiction ? <> · jurisdiction <strong>{group.jurisdiction}</strong></> : null}
		</span>
	);
};

export const InstanceList: FC<{
	types: string[];
	/** The registry's groups (the default first); a select shows when there are several. */
	groups?: { name: string; jurisdiction: string | null }[];
	/** The selected type's search attributes (`{}` without a type). */
	declared: AttributeDeclaration;
	filter: ListFilter;
	items: ListItem[];
	nextCursor: string | null;
	error?: { code: string; message: string } | undefined;
	config: ListConfig;
	/** The selected type's declared events with their shapes, for the bulk action's event editor. */
	events?: EventShapes;
}> = ({ types, groups = [], declared, filter, items, nextCursor, error, config, events = [] }) => {
	const query = (extra: Record<string, string>) => {
		const q = new URLSearchParams();
		if (filter.type) q.set('type', filter.type);
		if (filter.group) q.set('group', filter.group);
		for (const s of filter.status) q.append('status', s);
		for (const key of ['createdAfter', 'createdBefore', 'updatedAfter', 'updatedBefore', 'id', 'idPrefix', 'codeVersion', 'parent'] as const) if (filter[key]) q.set(key, filter[key]!);
		for (const [name, value] of filter.attributes) q.append(name, value);
		if (filter.order !== 'created') q.set('order', filter.order);
		// The page size travels with the page: Next shows as many rows as this page asked for.
		if (filter.limit !== DEFAULT_PAGE_SIZE) q.set('limit', String(filter.limit));
		for (const [k, v] of Object.entries(extra)) q.set(k, v);
		return dashboardHref(`/instances?${q}`);
	};
	const active =
		[filter.type, filter.group, filter.status.length, filter.createdAfter, filter.createdBefore, filter.updatedAfter, filter.updatedBefore, filter.id, filter.idPrefix, filter.codeVersion, filter.parent, filter.order !== 'created'].filter(Boolean).length +
		new Set(filter.attributes.map(([n]) => n.split('.')[1])).size +
		new Set((filter.unchecked ?? []).map(([n]) => n).filter((n) => n !== 'order')).size;
	const attributeNames = Object.keys(declared);
	return (
		<>
			<div class="page-head">
				<h1>Instances</h1>
				{groups.length > 1 ? <GroupBadge groups={groups} name={filter.group} /> : null}
				<span id="live" class="live" data-state="connecting" role="status" aria-live="polite">
					connecting…
				</span>
			</div>
			{filter.parent ? (
				<p class="banner info" id="parent-filter">
					Children of <a href={instanceHref(filter.parent)} class="mono">{filter.parent}</a>
				</p>
			) : null}
			<details class="filters-fold card" id="filters-fold" data-active={String(active)}>
				<summary>
					<span class="filters-title">Filters</span> <span class="muted">({active ? `${active} active` : 'none active'})</span>
				</summary>
			<form class="filters" method="get" action={dashboardHref('/instances')} id="filters">
				<label>
					<span>Type</span>
					<select name="type">
						<option value="">All types</option>
						{types.map((t) => (
							<option value={t} selected={t === filter.type}>{t}</option>
						))}
					</select>
				</label>
				{groups.length > 1 ? (
					<label>
						<span>Group</span>
						<select name="group" id="group-filter">
							{groups.map((g, i) => (
								<option value={i === 0 ? '' : g.name} selected={i === 0 ? !filter.group : g.name === filter.group}>
									{g.name}
									{i === 0 ? ' (default)' : ''}
									{g.jurisdiction ? ` (jurisdiction ${g.jurisdiction})` : ''}
								</option>
							))}
						</select>
					</label>
				) : null}
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
					<span>Id prefix</span>
					<input type="search" name="idPrefix" value={filter.idPrefix ?? ''} placeholder="ids starting with" autocomplete="off" spellcheck={false} />
				</label>
				<label>
					<span>Code version</span>
					<input type="search" name="codeVersion" value={filter.codeVersion ?? ''} placeholder="e.g. 2026-11-26.1" autocomplete="off" spellcheck={false} />
				</label>
				{filter.parent ? <input type="hidden" name="parent" value={filter.parent} /> : null}
				<label>
					<span>Order</span>
					<select name="order">
						<option value="created" selected={filter.order === 'created'}>Newest created</option>
						<option value="updated" selected={filter.order === 'updated'}>Recently updated</option>
						{attributeNames.flatMap((name) => [
							<option value={`-attr.${name}`} selected={filter.order === `-attr.${name}`}>{name}, highest first</option>,
							<option value={`attr.${name}`} selected={filter.order === `attr.${name}`}>{name}, lowest first</option>,
						])}
					</select>
				</label>
				{attributeNames.length ? (
					<fieldset class="attributes" id="attribute-filters">
						<legend>Attributes of {filter.type}</legend>
						{Object.entries(declared).map(([name, kind]) => (
							<AttributeInputs name={name} kind={kind} filter={filter} />
						))}
					</fieldset>
				) : !filter.type ? (
					<p class="muted hint" id="attribute-hint">Choose a type to filter by its search attributes.</p>
				) : null}
				<div class="actions">
					<button type="submit" class="primary">Apply</button>
					<a href={dashboardHref('/instances')} class="button">Reset</a>
				</div>
			</form>
			</details>
			{error ? <ErrorBanner code={error.code} message={error.message} /> : null}
			<div class="list-tools">
				{filter.type && !filter.id && !error ? <BulkTools type={filter.type} events={events} /> : null}
				<details class="columns-menu" id="columns-menu">
					<summary class="button">Columns</summary>
					<fieldset class="columns-choice">
						<legend>Show columns</legend>
						{COLUMNS.map((c) => (
							<label class="check">
								<input type="checkbox" name="column" value={c.key} checked={DEFAULT_COLUMNS.includes(c.key)} /> {c.label}
							</label>
						))}
						{attributeNames.map((name, i) => (
							<label class="check">
								<input type="checkbox" name="attribute-column" value={name} checked={i < DEFAULT_ATTRIBUTE_COLUMNS} /> {name}
							</label>
						))}
					</fieldset>
				</details>
			</div>
			{filter.type && !filter.id && !error ? <BulkProgressCard hidden /> : null}
			<div class="card table-card">
				{attributeNames.length ? (
					// One rule per declared attribute hides its column (the names are letters, digits and `_`).
					<style dangerouslySetInnerHTML={{ __html: attributeNames.map((n) => `table.instances.hide-attr-${n} [data-col="attr-${n}"]{display:none}`).join('\n') }} />
				) : null}
				<table class={`instances${filter.type ? ' one-type' : ''} ${[...COLUMNS.filter((c) => !DEFAULT_COLUMNS.includes(c.key)).map((c) => `hide-${c.key}`), ...attributeNames.slice(DEFAULT_ATTRIBUTE_COLUMNS).map((n) => `hide-attr-${n}`)].join(' ')}`} id="instances">
					<thead>
						<tr>
							<th scope="col" data-col="id">Instance</th>
							{COLUMNS.map((c) => (
								<th scope="col" data-col={c.key}>{c.label}</th>
							))}
							{attributeNames.map((name) => (
								<th scope="col" data-col={`attr-${name}`} title={`search attribute (${declared[name]})`}>{name}</th>
							))}
						</tr>
					</thead>
					<tbody>
						{items.map((item) => (
							<Row item={item} declared={declared} />
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
				<Row item={{ id: '', type: '', status: 'created', createdAt: 0, updatedAt: 0 }} declared={declared} />
			</template>
			<script type="application/json" id="list-config" dangerouslySetInnerHTML={{ __html: safeJson(config) }} />
			<script type="module" src={dashboardHref('/list.js')}></script>
			{filter.type && !filter.id && !error ? (
				<>
					<ConfirmDialog />
					<script type="module" src={dashboardHref('/bulk.js')}></script>
				</>
			) : null}
		</>
	);
};
