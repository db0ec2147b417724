import { groupScoped } from '../client/group-scope';
import { IndexClient } from '../client/index-client';
import { backlogSummary, failingSummary } from '../client/reconcile';
import { declaredScheduleTypes, schedules } from '../client/schedule-client';
import type { Registry } from '../engine/definition/registry';
import type { ApiEnv } from './env';
import { STUCK_COUNT_CAP, type TypeSnapshot } from './metrics-families';

/**
 * What every type looks like to an on-call engineer at `at`: its run metrics (the index shards),
 * delivery backlog and failing passes (its backlog object), stuck instances (the index) and
 * schedule (woken, as `GET /schedules` does). `GET /metrics` serves it as Prometheus text and
 * `GET /alerts` as the alerts the dashboard's overview shows. Its cost grows with shards, not instances.
 *
 * `group`: the group whose index shards and backlog objects to read, in its jurisdiction
 * (docs/residency.md; undeclared: INVALID_GROUP). Schedules run in the default group only, so
 * another group's snapshots carry none.
 */
export async function typeSnapshots(env: ApiEnv, registry: Registry, at: number, group?: string): Promise<TypeSnapshot[]> {
	const index = new IndexClient(env, registry, group !== undefined ? { group } : {});
	const inGroup = groupScoped(env, index.group.place);
	const scheduled = new Set(index.group.isDefault ? declaredScheduleTypes(registry) : []);
	return Promise.all(registry.types().map((type) => snapshot(inGroup, registry, index, type, at, scheduled.has(type))));
}

async function snapshot(env: ApiEnv, registry: Registry, index: IndexClient, type: string, at: number, scheduled: boolean): Promise<TypeSnapshot> {
	const { stuckAfter } = registry.get(type);
	// Past the threshold since the last status change: the (status, created_at, id) index walks this status's entries
	// created before the threshold (as created_at <= updated_at) and keeps those updated before it too.
	const stuckCount = async (status: 'running' | 'waiting'): Promise<number | null> => {
		const threshold = stuckAfter[status];
		if (threshold === null) return null;
		const page = await index.list({ type, status: [status], updatedBefore: at - threshold, order: 'updatedAt', limit: STUCK_COUNT_CAP });
		return page.items.length;
	};
	const [shards, backlog, failing, running, waiting, schedule] = await Promise.all([
		index.shardMetrics(type, at),
		backlogSummary(env, type),
		failingSummary(env, type, at),
		stuckCount('running'),
		stuckCount('waiting'),
		scheduled ? schedules.wake(env, type) : undefined,
	]);
	return { type, shards, backlog, failing, stuckAfter, stuck: { running, waiting }, ...(schedule ? { schedule } : {}) };
}
