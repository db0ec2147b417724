import type { IndexLayout } from '../engine/definition/registry';
import type { IndexEntry } from '../engine/index/index-entry';
import { DEFAULT_LIMIT, positionOf, type TimeOrder } from '../engine/index/index-query';
import { describeThrown } from '../engine/support/thrown-value';
import { IndexClient, type ListQuery } from './index-client';
import { groupNames, groupOfLayout, type LayoutGroups } from './index-group';
import type { ShardflowEnv } from './instance-client';

/** One page of a listing across groups: the newest entries of every group that answered, and which did not. */
export interface GroupsListing {
	items: (IndexEntry & { group: string })[];
	/** The groups whose index answered, in the order asked. */
	answered: string[];
	/** The groups that did not, with why: their instances are missing from `items`. */
	failed: { group: string; error: { code?: string; message: string } }[];
}

/**
 * A listing across groups (docs/residency.md): an explicit scatter-gather over each group's own
 * index, in its jurisdiction, merged by time. It is one page (the first `limit` entries of the
 * merge), not a walk: to page through, list each group by itself. A group that fails to answer
 * does not fail the listing; the answer names it, so an empty result never hides an outage.
 */
export async function listAcrossGroups(env: ShardflowEnv, layout: IndexLayout, query: Omit<ListQuery, 'cursor' | 'order'> & { order?: TimeOrder }, groups?: string[]): Promise<GroupsListing> {
	const names = [...new Set(groups ?? groupNames(layout as unknown as LayoutGroups))];
	for (const name of names) groupOfLayout(layout as unknown as LayoutGroups, name); // refuses an unknown one before any read
	const limit = query.limit ?? DEFAULT_LIMIT;
	const order: TimeOrder = query.order ?? 'createdAt';
	const settled = await Promise.allSettled(names.map((group) => new IndexClient(env, layout, { group }).list({ ...query, order, limit, cursor: null })));
	const items: GroupsListing['items'] = [];
	const answered: string[] = [];
	const failed: GroupsListing['failed'] = [];
	settled.forEach((result, i) => {
		const group = names[i]!;
		if (result.status === 'fulfilled') {
			answered.push(group);
			for (const entry of result.value.items) items.push({ ...entry, group });
		} else {
			const error = describeThrown(result.reason) as { code?: string; message?: string };
			failed.push({ group, error: { ...(error.code !== undefined ? { code: error.code } : {}), message: String(error.message ?? result.reason) } });
		}
	});
	items.sort((a, b) => {
		const x = positionOf(a, order);
		const y = positionOf(b, order);
		return x.at !== y.at ? (y.at as number) - (x.at as number) : a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
	});
	return { items: items.slice(0, limit), answered, failed };
}
