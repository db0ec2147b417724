import { runInDurableObject } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { FAILING_REPORT_STALE_MS } from '../../src/engine/instance/failing-passes';
import { FailingPassesStore } from '../../src/runtime/failing-passes-store';
import { stub, uniqueId } from '../helpers';

const T = 1_800_000_000_000;

describe("a type's reports of instances whose passes keep failing (in its backlog object)", () => {
	it('keeps the first time of a run of failures across refreshes, and removes a report nobody refreshed for 15 minutes when a new one comes', () =>
		runInDurableObject(stub(uniqueId('failing-store')), async (_, state) => {
			const store = new FailingPassesStore(state.storage.kv);
			store.report({ id: 'gone', cause: 'cut', count: 3, since: T, at: T });
			store.report({ id: 'a', cause: 'failed', count: 3, since: T, at: T });
			store.report({ id: 'a', cause: 'failed', count: 4, since: T + 60_000, at: T + 60_000 });
			expect(store.summary(T + 60_000)).toMatchObject({ instances: 2, mostInARow: 4, worst: [{ id: 'a', count: 4, since: T }, { id: 'gone' }] });

			const later = T + 60_000 + FAILING_REPORT_STALE_MS;
			store.report({ id: 'a', cause: 'failed', count: 9, since: later, at: later });
			expect(state.storage.kv.get('failing:gone')).toBeUndefined();
			expect(store.summary(later)).toMatchObject({ instances: 1, worst: [{ id: 'a', count: 9, since: T }] });
			store.withdraw('a');
			expect(store.summary(later)).toMatchObject({ instances: 0, mostInARow: 0, worst: [] });
		}));
});
