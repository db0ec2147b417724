import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineRegistry } from '../../src/engine/definition/registry';
import { DEFAULT_PLACE, inPlace, placeOf, splitGroupTag } from '../../src/engine/support/group-id';
import { placeCreate, resolveGroups } from '../../src/engine/groups/groups';
import { parseObjectName, roleKindOf } from '../../src/engine/object-names';
import { ErrorCode } from '../../src/engine/support/errors';
import { assertValidWorkflowId } from '../../src/engine/support/ids';
import { scopedName } from '../../src/client/group-scope';
import { objectPlace } from '../../src/runtime/object-place';
import { routeCreate } from '../../src/operations/create-placement';
import { VirtualHost } from '../../src/testing/virtual-host';
import { checkChildPlacement, crossGroupChildId } from '../../src/engine/children/cross-group-child';
import { inlineParentsOf } from '../../src/engine/children/child-workflows';
import { Workflow, type StepOf } from '../../src/authoring';

class GroupedWaiter extends Workflow<{ country: string }, string> {
	static override readonly type = 'grouped-waiter';
	static override payload = z.object({ country: z.string() });
	static override events = { go: z.object({}) };
	async run(step: StepOf<typeof GroupedWaiter>, { country }: { country: string }) {
		await step.waitForEvent('go');
		return step.do('done', () => `done:${country}`);
	}
}

const GROUPS = { default: 'global', groups: { eu: { jurisdiction: 'eu' as const, locationHint: 'weur' as const }, tenant: {}, later: { jurisdiction: 'eu' as const, deployed: false } } };
const groups = resolveGroups(GROUPS);
const byCountry = (p: { country: string }) => ({ DE: 'eu', AU: 'au', XX: 'later' })[p.country] ?? 'global';

describe('group parts of ids and names', () => {
	it('reads the group and jurisdiction from an id, and every id without "~" as the default group', () => {
		expect(splitGroupTag('eu.eu~order-1')).toEqual({ place: { group: 'eu', jurisdiction: 'eu', tag: 'eu.eu' }, rest: 'order-1' });
		expect(placeOf('tenant~order-1')).toEqual({ group: 'tenant', jurisdiction: null, tag: 'tenant' });
		expect(placeOf('order-1')).toBe(DEFAULT_PLACE);
		expect(placeOf('pay:2026.11-x')).toBe(DEFAULT_PLACE);
		expect(inPlace(groups.get('eu')!.place, '__index:pay:3')).toBe('eu.eu~__index:pay:3');
		expect(inPlace(DEFAULT_PLACE, '__index:pay:3')).toBe('__index:pay:3');
	});

	it('accepts ids in a group and refuses a malformed group part, a reserved rest and an unknown jurisdiction', () => {
		expect(() => assertValidWorkflowId('eu.eu~0193a0b0-0000-7000-8000-000000000000')).not.toThrow();
		expect(() => assertValidWorkflowId('tenant~order-1')).not.toThrow();
		for (const bad of ['eu.mars~x', 'EU~x', '~x', 'eu~', 'eu~__index:x:0', 'eu.eu~a~b', `eu~${'x'.repeat(100)}`]) {
			expect(() => assertValidWorkflowId(bad), bad).toThrow();
		}
	});

	it('parses the role of an object of a group from the name after its group part', () => {
		expect(parseObjectName('eu.eu~__index:pay:3')).toEqual({ role: 'index', type: 'pay', shard: 3 });
		expect(parseObjectName('eu.eu~__bulk:abc')).toEqual({ role: 'bulk', id: 'abc' });
		expect(parseObjectName('eu.eu~order-1')).toEqual({ role: 'instance', id: 'eu.eu~order-1' });
		// A limiter key of the default group may hold a "~": it is no group part.
		expect(parseObjectName('__limit:pay:a~b')).toEqual({ role: 'limiter', type: 'pay', key: 'a~b' });
		expect(roleKindOf('Bad~__index:x:0')).toBeUndefined();
	});

	it("scopes engine objects' names to a group, leaving instance ids and the shared key store alone", () => {
		const eu = groups.get('eu')!.place;
		expect(scopedName(eu, '__backlog:pay')).toBe('eu.eu~__backlog:pay');
		expect(scopedName(eu, '__keys')).toBe('__keys');
		expect(scopedName(eu, 'eu.eu~order-1')).toBe('eu.eu~order-1');
		expect(scopedName(eu, 'order-1')).toBe('order-1');
	});
});

describe('declaring groups', () => {
	it('refuses a default group with a jurisdiction, an unknown jurisdiction or hint, and a type pinned to an undeclared group', () => {
		expect(() => resolveGroups({ default: 'global', groups: { global: { jurisdiction: 'eu' } } })).toThrow(/default group/);
		expect(() => resolveGroups({ groups: { eu: { jurisdiction: 'mars' as never } } })).toThrow(/jurisdiction/);
		expect(() => resolveGroups({ groups: { eu: { locationHint: 'moon' as never } } })).toThrow(/locationHint/);
		expect(() => resolveGroups({ groups: { 'Bad.Name': {} } })).toThrow(/group name/);
		const registry = defineRegistry({ 'grouped-waiter': { workflow: GroupedWaiter, group: 'mars' } }, { groups: GROUPS });
		expect(registry.problem?.message).toMatch(/does not declare/);
		expect(registry.problem?.code).toBe(ErrorCode.InvalidRegistry);
	});
});

describe('placing a create', () => {
	it('follows the type: pinned, chosen from the payload, else the group asked for, else the default', () => {
		expect(placeCreate(groups, 't', 'eu', {}).group.name).toBe('eu');
		expect(placeCreate(groups, 't', byCountry, { country: 'DE' }).group.name).toBe('eu');
		expect(placeCreate(groups, 't', byCountry, { country: 'FR' }).group.name).toBe('global');
		expect(placeCreate(groups, 't', undefined, {}, 'tenant').group.name).toBe('tenant');
		expect(placeCreate(groups, 't', undefined, {}).group.name).toBe('global');
	});

	it('falls back to the default group for an undeclared group, or an undeployed one without a jurisdiction, saying which and why', () => {
		expect(placeCreate(groups, 't', byCountry, { country: 'AU' })).toMatchObject({ group: { name: 'global' }, fallback: { requested: 'au', reason: 'unknown' } });
		const withNext = resolveGroups({ ...GROUPS, groups: { ...GROUPS.groups, next: { deployed: false } } });
		expect(placeCreate(withNext, 't', undefined, {}, 'next')).toMatchObject({ group: { name: 'global' }, fallback: { requested: 'next', reason: 'undeployed' } });
	});

	it('refuses a create for an undeployed group with a jurisdiction (GROUP_NOT_DEPLOYED) rather than moving its data out of the jurisdiction, unless the group opts into fallback', () => {
		expect(() => placeCreate(groups, 't', byCountry, { country: 'XX' })).toThrow(expect.objectContaining({ code: ErrorCode.GroupNotDeployed, message: expect.stringContaining('"later"') }));
		expect(() => placeCreate(groups, 't', undefined, {}, 'later')).toThrow(expect.objectContaining({ code: ErrorCode.GroupNotDeployed }));
		const optedIn = resolveGroups({ ...GROUPS, groups: { ...GROUPS.groups, later: { jurisdiction: 'eu', deployed: false, fallback: true } } });
		expect(placeCreate(optedIn, 't', byCountry, { country: 'XX' })).toMatchObject({ group: { name: 'global' }, fallback: { requested: 'later', reason: 'undeployed' } });
		expect(() => resolveGroups({ groups: { later: { jurisdiction: 'eu', deployed: false, fallback: 'yes' as never } } })).toThrow(/fallback must be a boolean/);
	});

	it('refuses a group the type contradicts, and a group function that throws or answers no name', () => {
		expect(() => placeCreate(groups, 't', 'eu', {}, 'tenant')).toThrow(expect.objectContaining({ code: ErrorCode.GroupMismatch }));
		expect(() => placeCreate(groups, 't', () => { throw new Error('no country'); }, {})).toThrow(expect.objectContaining({ code: ErrorCode.InvalidGroup }));
		expect(() => placeCreate(groups, 't', () => 42 as never, {})).toThrow(expect.objectContaining({ code: ErrorCode.InvalidGroup }));
	});

	it('generates an id in the group of a type this isolate knows, with its location hint, and leaves a given id as given', () => {
		defineRegistry({ 'grouped-waiter': { workflow: GroupedWaiter, group: byCountry } }, { groups: GROUPS });
		const de = routeCreate({ type: 'grouped-waiter', payload: { country: 'DE' } });
		expect(de.id).toMatch(/^eu\.eu~[0-9a-f-]{36}$/);
		expect(de.locationHint).toBe('weur');
		expect(routeCreate({ type: 'grouped-waiter', payload: { country: 'FR' } }).id).not.toContain('~');
		expect(routeCreate({ type: 'grouped-waiter', id: 'order-1', payload: { country: 'DE' } })).toEqual({ id: 'order-1' });
		expect(routeCreate({ type: 'nobody-knows', payload: {} }).id).not.toContain('~');
	});
});

describe('an object reached through the wrong jurisdiction', () => {
	const registry = defineRegistry({}, { groups: GROUPS });
	it('refuses every call (WRONG_JURISDICTION) when an eu name is reached without its jurisdiction, or a default name through eu', () => {
		expect(objectPlace({ name: 'eu.eu~order-1' }, {} as never, registry).misplaced?.code).toBe(ErrorCode.WrongJurisdiction);
		expect(objectPlace({ name: 'order-1', jurisdiction: 'eu' }, {} as never, registry).misplaced?.code).toBe(ErrorCode.WrongJurisdiction);
		expect(objectPlace({ name: 'eu.eu~order-1', jurisdiction: 'fedramp' }, {} as never, registry).misplaced?.code).toBe(ErrorCode.WrongJurisdiction);
		expect(objectPlace({ name: 'eu.eu~order-1', jurisdiction: 'eu' }, {} as never, registry).misplaced).toBeUndefined();
	});

	it('accepts an eu name without a jurisdiction where the runtime implements none (workerd), whatever SHARDFLOW_ENV says, and nowhere else', () => {
		const namespace = (jurisdiction: (j: string) => unknown) => ({ idFromName: () => 1, get: () => 1, getByName: () => 1, jurisdiction });
		const workerd = namespace(() => ({
			idFromName: () => {
				throw new Error('Jurisdiction restrictions are not implemented in workerd.');
			},
		}));
		// The engine Worker of a multi-Worker wrangler dev: no SHARDFLOW_ENV (a --var reaches only the first Worker).
		expect(objectPlace({ name: 'eu.eu~order-1' }, { WORKFLOW_RUNNER: workerd } as never, registry).misplaced).toBeUndefined();
		// Deployed (jurisdictions work): refused, even with SHARDFLOW_ENV=development set by mistake.
		const deployed = namespace(() => ({ idFromName: () => 1 }));
		expect(objectPlace({ name: 'eu.eu~order-1' }, { WORKFLOW_RUNNER: deployed, SHARDFLOW_ENV: 'development' } as never, registry).misplaced?.code).toBe(ErrorCode.WrongJurisdiction);
		// Any other error of the jurisdiction's namespace is not workerd's: strict.
		const failing = namespace(() => ({
			idFromName: () => {
				throw new Error('jurisdiction not available to this account');
			},
		}));
		expect(objectPlace({ name: 'eu.eu~order-1' }, { WORKFLOW_RUNNER: failing } as never, registry).misplaced?.code).toBe(ErrorCode.WrongJurisdiction);
		// A default-group name reached through eu stays refused locally too.
		expect(objectPlace({ name: 'order-1', jurisdiction: 'eu' }, { WORKFLOW_RUNNER: workerd } as never, registry).misplaced?.code).toBe(ErrorCode.WrongJurisdiction);
	});

	it("hides the shared archive bucket from a jurisdiction group that names none, and keeps it for the default group", () => {
		const env = { ARCHIVE: { shared: true }, WORKFLOW_RUNNER: { idFromName: () => 1, get: () => 1, getByName: () => 1 } } as never;
		expect((objectPlace({ name: 'eu.eu~order-1', jurisdiction: 'eu' }, env, registry).env as { ARCHIVE?: unknown }).ARCHIVE).toBeUndefined();
		expect((objectPlace({ name: 'tenant~order-1' }, env, registry).env as { ARCHIVE?: unknown }).ARCHIVE).toEqual({ shared: true });
		expect((objectPlace({ name: 'order-1' }, env, registry).env as { ARCHIVE?: unknown }).ARCHIVE).toEqual({ shared: true });
	});
});

describe('instances created before groups', () => {
	it('keep running, and a repeated create answers them, after the registry declares groups and pins their type elsewhere', async () => {
		const before = new VirtualHost({ registry: defineRegistry({ 'grouped-waiter': { workflow: GroupedWaiter } }) });
		expect(await before.engine().create('order-1', 'grouped-waiter', { country: 'DE' })).toEqual({ id: 'order-1', type: 'grouped-waiter', status: 'created', created: true });
		await before.idle();
		const after = new VirtualHost({ registry: defineRegistry({ 'grouped-waiter': { workflow: GroupedWaiter, group: 'eu' } }, { groups: GROUPS }), durable: before.durable, clock: before.clock });
		const engine = after.engine();
		expect(await engine.create('order-1', 'grouped-waiter', { country: 'DE' })).toMatchObject({ id: 'order-1', created: false });
		await engine.sendEvent('go', {});
		await after.idle();
		expect(engine.status()).toMatchObject({ status: 'completed', output: 'done:DE' });
		// A new instance of the pinned type under a default-group id is refused, before anything is stored.
		const fresh = new VirtualHost({ registry: after.registry });
		await expect(fresh.engine().create('order-2', 'grouped-waiter', { country: 'DE' })).rejects.toMatchObject({ code: ErrorCode.GroupMismatch });
		expect(fresh.durable.store.readInstance()).toBeUndefined();
	});
});

describe('the test kit', () => {
	it('runs a type pinned to a group under an id in that group', async () => {
		const { testWorkflow } = await import('../../src/testing/index');
		const registry = defineRegistry({ 'grouped-waiter': { workflow: GroupedWaiter, group: 'eu' } }, { groups: GROUPS });
		const kit = testWorkflow(GroupedWaiter, { registry });
		await kit.start({ country: 'DE' });
		await kit.sendEvent('go', {});
		expect(await kit.output()).toBe('done:DE');
		expect((await kit.status()).id).toBe('eu.eu~test-grouped-waiter');
	});
});

describe('a create that falls back', () => {
	it('lands in the default group, answers which group it asked for and why, and logs group.fallback', async () => {
		const registry = defineRegistry({ 'grouped-waiter': { workflow: GroupedWaiter, group: byCountry } }, { groups: GROUPS });
		const host = new VirtualHost({ registry });
		const logs: Record<string, unknown>[] = [];
		host.log = (record) => void logs.push(record);
		expect(await host.engine().create('order-au', 'grouped-waiter', { country: 'AU' })).toEqual({
			id: 'order-au', type: 'grouped-waiter', status: 'created', created: true, group: 'global', groupFallback: { requested: 'au', reason: 'unknown' },
		});
		expect(logs.filter((r) => r.event === 'group.fallback')).toEqual([expect.objectContaining({ severity: 'warn', instanceId: 'order-au', group: 'global', requestedGroup: 'au', reason: 'unknown' })]);
	});
});

describe('a child in another group (allowCrossGroup)', () => {
	const eu = groups.get('eu')!.place;
	class EuChild extends Workflow<{ country: string }, string> {
		static override readonly type = 'eu-child';
		async run() {
			return 'ok';
		}
	}
	const parentHooks = (parentId: string, generation = 0) => ({
		parentId, generation, assertRegistered: () => {},
		placeChild: (_type: string, payload: unknown) => groups.get(byCountry(payload as { country: string }))?.place ?? DEFAULT_PLACE,
	});

	it("names the child in its own group, after its parent's group, id, generation and step: the same on every replay", () => {
		expect(crossGroupChildId(eu, 'order-1', 0, 'charge')).toBe('eu.eu~.::-::order-1::charge');
		expect(crossGroupChildId(DEFAULT_PLACE, 'eu.eu~order-1', 0, 'charge')).toBe('.::eu.eu::order-1::charge');
		expect(crossGroupChildId(eu, 'order-1', 2, 'charge')).toBe('eu.eu~.::-::order-1::g2::charge');
		// Parents of the same local id in different groups get different children.
		expect(crossGroupChildId(eu, 'tenant~order-1', 0, 'charge')).not.toBe(crossGroupChildId(eu, 'order-1', 0, 'charge'));
		const long = crossGroupChildId(eu, `tenant~${'p'.repeat(90)}`, 0, 's'.repeat(60));
		expect(() => assertValidWorkflowId(long)).not.toThrow();
		expect(placeOf(long)).toEqual(eu);
		expect(long).toBe(crossGroupChildId(eu, `tenant~${'p'.repeat(90)}`, 0, 's'.repeat(60)));
		// No parent holds it inline.
		expect(inlineParentsOf('eu.eu~.::-::order-1::charge')).toEqual([]);
	});

	it("places the child of an opted-in step in its type's group, and leaves a child of the parent's own group as without the option", () => {
		const hooks = parentHooks('order-1');
		expect(checkChildPlacement(hooks, 'invoke', 'charge', EuChild, { payload: { country: 'DE' }, allowCrossGroup: true })).toMatchObject({ childId: 'eu.eu~.::-::order-1::charge', crossGroup: true });
		expect(checkChildPlacement(hooks, 'invoke', 'charge', EuChild, { payload: { country: 'FR' }, allowCrossGroup: true })).toEqual({ childId: 'order-1::charge', childType: 'eu-child', onParentTerminate: 'terminate', mode: 'invoke' });
		expect(checkChildPlacement(hooks, 'invoke', 'charge', EuChild, { payload: { country: 'DE' } })).not.toHaveProperty('crossGroup');
		expect(() => checkChildPlacement(hooks, 'invoke', 'charge', EuChild, { payload: {}, allowCrossGroup: 'yes' as never })).toThrow(expect.objectContaining({ code: ErrorCode.InvalidOptions }));
	});
});
