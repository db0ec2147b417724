import { describe, expect, it } from 'vitest';
import { Overview, type TypeSummary } from '../../src/dashboard/views/overview';
import { plural } from '../../src/dashboard/public/dashboard/plural.js';

const summary = (type: string, counts: Record<string, number>): TypeSummary => ({ type, shards: 1, counts, backlog: { pending: 0, oldestAgeMs: null, oldest: [] } });

/** The overview page's text of each type's total (what overview.js redraws with the same `plural`). */
async function totals(types: TypeSummary[]): Promise<string[]> {
	const html = String(await Overview({ types, metrics: {}, scheduled: [], alerts: [] })!.toString());
	return [...html.matchAll(/data-field="total">([^<]*)</g)].map((m) => m[1]!);
}

describe('the overview counts instances in words', () => {
	it('says "1 instance" for one, and "0 instances", "2 instances", "1,234 instances" otherwise', async () => {
		expect(await totals([summary('one', { completed: 1 }), summary('none', {}), summary('two', { running: 1, errored: 1 }), summary('many', { completed: 1234 })])).toEqual([
			'1 instance',
			'0 instances',
			'2 instances',
			'1,234 instances',
		]);
	});

	it('is what the live scripts write too (overview.js, bulk.js)', () => {
		expect([plural(1, 'instance'), plural(3, 'instance'), plural(1, 'payment instance')]).toEqual(['1 instance', '3 instances', '1 payment instance']);
	});
});
