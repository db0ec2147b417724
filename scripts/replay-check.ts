import type { HistoryEvent } from '../src/engine/history/history';
import type { Registry } from '../src/engine/definition/registry';
import { replayHistory } from '../src/testing/history-replay';

/**
 * The replay check before a deploy: pages through a deployment's list API,
 * downloads the history of every matching instance and replays it against the
 * local code with the test kit's replayer (no step function runs). A deploy
 * that would make an instance in flight diverge is caught before it ships.
 */
export interface ReplayCheckOptions {
	/** The deployment's base URL (where `/workflows` is served). */
	url: string;
	token?: string;
	/** The local code: the registry the new deployment will run. */
	registry: Registry;
	/** Types to check; every type the deployment lists by default (from `GET /types`). */
	types?: string[];
	/** Statuses of the instances to check: those a deploy can affect by default. */
	statuses?: string[];
	fetch?: typeof fetch;
}

export interface ReplayCheckRow {
	id: string;
	type: string;
	status: string;
	/** `clean`, or the first divergence. */
	verdict: string;
	ok: boolean;
}

export const IN_FLIGHT_STATUSES = ['created', 'running', 'sleeping', 'waiting', 'paused', 'diverged'];

export async function replayCheck(options: ReplayCheckOptions): Promise<{ rows: ReplayCheckRow[]; divergent: number }> {
	const call = httpClient(options);
	const statuses = options.statuses ?? IN_FLIGHT_STATUSES;
	const types = options.types ?? ((await call('/types')) as { types: { type: string }[] }).types.map((t) => t.type);
	const rows: ReplayCheckRow[] = [];
	for (const type of types) {
		let cursor: string | null = null;
		do {
			const query = new URLSearchParams({ type, status: statuses.join(','), limit: '1000', ...(cursor ? { cursor } : {}) });
			const page = (await call(`/workflows?${query}`)) as { items: { id: string; status: string }[]; nextCursor: string | null };
			for (const item of page.items) rows.push(await checkInstance(call, options.registry, type, item));
			cursor = page.nextCursor;
		} while (cursor);
	}
	return { rows, divergent: rows.filter((r) => !r.ok).length };
}

async function checkInstance(call: HttpClient, registry: Registry, type: string, item: { id: string; status: string }): Promise<ReplayCheckRow> {
	const row = { id: item.id, type, status: item.status };
	if (!registry.has(type)) return { ...row, ok: false, verdict: `the local code has no workflow type "${type}"` };
	const events: HistoryEvent[] = [];
	let after: string | null = null;
	let payload: unknown;
	do {
		const page = (await call(`/workflows/${encodeURIComponent(item.id)}/history?limit=1000${after ? `&after=${after}` : ''}`)) as {
			events: HistoryEvent[];
			nextCursor: string | null;
			generation: number;
		};
		events.push(...page.events);
		after = page.nextCursor;
	} while (after);
	// A restarted generation has no `workflow.created` record: its payload comes from the status.
	if (!events.some((e) => e.kind === 'workflow.created')) payload = ((await call(`/workflows/${encodeURIComponent(item.id)}`)) as { payload: unknown }).payload;
	const result = await replayHistory(registry.get(type).workflow as never, { id: item.id, events }, payload === undefined ? { id: item.id } : { id: item.id, payload });
	return { ...row, ok: result.ok, verdict: result.ok ? 'clean' : result.divergence!.message };
}

type HttpClient = (path: string) => Promise<unknown>;

function httpClient({ url, token, fetch: fetchImpl = fetch }: ReplayCheckOptions): HttpClient {
	const base = url.replace(/\/+$/, '');
	return async (path) => {
		const res = await fetchImpl(`${base}${path}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
		const text = await res.text();
		if (!res.ok) throw new Error(`GET ${path} answered ${res.status}: ${text.slice(0, 300)}`);
		return JSON.parse(text);
	};
}

/** The table the CLI prints: one row per instance, the first divergence where there is one. */
export function formatReplayTable(rows: ReplayCheckRow[]): string {
	const header = ['instance', 'type', 'status', 'first divergence'];
	const body = rows.map((r) => [r.id, r.type, r.status, r.verdict]);
	const widths = header.map((h, i) => Math.min(60, Math.max(h.length, ...body.map((b) => b[i]!.length))));
	const line = (cells: string[]) => cells.map((c, i) => (i < 3 ? c.padEnd(widths[i]!) : c)).join('  ');
	return [line(header), line(widths.map((w) => '-'.repeat(w))), ...body.map(line)].join('\n');
}
