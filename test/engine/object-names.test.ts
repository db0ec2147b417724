import { describe, expect, it } from 'vitest';
import { backlogName, KEYS_OBJECT, limiterName, parseObjectName, roleKindOf, scheduleName, shardName } from '../../src/engine/object-names';

describe('object names', () => {
	it('parses every name it builds back into its role and parts', () => {
		expect(parseObjectName(shardName('payment', 12))).toEqual({ role: 'index', type: 'payment', shard: 12 });
		expect(parseObjectName(backlogName('payment'))).toEqual({ role: 'backlog', type: 'payment' });
		expect(parseObjectName(KEYS_OBJECT)).toEqual({ role: 'keys' });
		expect(parseObjectName(scheduleName('daily-report'))).toEqual({ role: 'schedule', type: 'daily-report' });
		// A concurrency key may itself hold colons; the type never does.
		expect(parseObjectName(limiterName('sync', 'tenant:42'))).toEqual({ role: 'limiter', type: 'sync', key: 'tenant:42' });
		expect(parseObjectName('pay-1')).toEqual({ role: 'instance', id: 'pay-1' });
	});

	it('gives an object without a name no role', () => {
		expect(roleKindOf(undefined)).toBeUndefined();
		expect(roleKindOf('order:sched:2026-01-01T06:00:00Z')).toBe('instance');
		expect(roleKindOf('__index:payment:0')).toBe('index');
	});
});
