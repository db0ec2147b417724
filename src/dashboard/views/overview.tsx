import type { FC } from 'hono/jsx';
import { WORKFLOW_STATUSES } from '../../engine/types';
import { StatusBadge } from './layout';

export interface TypeSummary {
	type: string;
	shards: number;
	previousShards?: number;
	counts: Record<string, number>;
	backlog: { pending: number; oldestAgeMs: number | null; oldest: { id: string; since: number }[] };
}

/** Every type with its counts per status, shards and delivery backlog (from GET /types). */
export const Overview: FC<{ types: TypeSummary[] }> = ({ types }) => (
	<>
		<div class="page-head">
			<h1>Workflow types</h1>
			<p class="muted">Counts come from the sharded index (it lags an instance by ~20 ms).</p>
		</div>
		{types.length === 0 ? (
			<div class="empty">No workflow types are registered. Add one in <code>src/workflows/registry.ts</code>.</div>
		) : (
			<div class="cards">
				{types.map((t) => {
					const total = Object.values(t.counts).reduce((a, b) => a + b, 0);
					return (
						<section class="card type-card" data-type={t.type}>
							<header>
								<h2>
									<a href={`/dashboard/instances?type=${encodeURIComponent(t.type)}`}>{t.type}</a>
								</h2>
								<span class="total" data-field="total">{total.toLocaleString('en')} instances</span>
							</header>
							<ul class="counts">
								{WORKFLOW_STATUSES.map((status) => (
									<li class={t.counts[status] ? '' : 'zero'}>
										<a href={`/dashboard/instances?type=${encodeURIComponent(t.type)}&status=${status}`}>
											<StatusBadge status={status} />
											<span class="count" data-count={status}>{(t.counts[status] ?? 0).toLocaleString('en')}</span>
										</a>
									</li>
								))}
							</ul>
							<footer>
								<span>
									{t.shards} index shard{t.shards === 1 ? '' : 's'}
									{t.previousShards !== undefined ? ` (resizing from ${t.previousShards})` : ''}
								</span>
								<span class={t.backlog.pending ? 'warn' : 'muted'} data-field="backlog">
									{t.backlog.pending
										? `backlog: ${t.backlog.pending} pending, oldest ${Math.round((t.backlog.oldestAgeMs ?? 0) / 1000)} s`
										: 'backlog: none'}
								</span>
							</footer>
						</section>
					);
				})}
			</div>
		)}
	</>
);
