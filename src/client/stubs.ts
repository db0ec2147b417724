import { roleObjects, roleCalls, type AddressOf, type CallArgs, type CallOutput, type CallRole, type RoleCallName, type RoleCalls, type RoleOf } from '../operations/role-calls';
import { namespace, type ShardflowEnv } from './instance-client';
import { unwrap, type RoleRpc, type RpcResult } from './rpc';

// The stubs and calls of the engine's own objects, by role, all derived from src/operations/role-calls.ts:
// the object's name from its role's address (`roleObjects`), the methods from its calls. An instance's
// stub is `instanceStub` (instance-client.ts).

/** The stub of a role's object by its address: `roleStub(env, 'index', type, n)`. */
export function roleStub<K extends CallRole>(env: ShardflowEnv, role: K, ...address: AddressOf<K>): RoleRpc<K> {
	const name = (roleObjects[role] as (...parts: unknown[]) => string)(...address);
	return namespace(env).getByName(name) as RoleRpc<K>;
}

/** Makes one declared call on the object at `address` and turns its envelope back into a value or a typed error. */
export function callRole<N extends RoleCallName>(env: ShardflowEnv, name: N, address: AddressOf<RoleOf<N>>, ...args: CallArgs<RoleCalls[N]>): Promise<CallOutput<RoleCalls[N]>> {
	try {
		const stub = (roleStub as (env: ShardflowEnv, role: CallRole, ...address: unknown[]) => unknown)(env, roleCalls[name].role, ...address) as unknown as Record<N, (...args: unknown[]) => Promise<RpcResult<CallOutput<RoleCalls[N]>>>>;
		return unwrap(stub[name](...args));
	} catch (error) {
		return Promise.reject(error);
	}
}

/** The helper name a call declares, if any. */
type HelperOf<C> = C extends { helper?: infer H } ? Exclude<H, undefined> : never;

/** A role's client helpers: one per call that declares a `helper`, taking the object's address then the call's arguments. */
export type RoleHelpers<K extends CallRole> = {
	[N in RoleCallName as RoleOf<N> extends K ? HelperOf<RoleCalls[N]> : never]: (env: ShardflowEnv, ...rest: [...AddressOf<K>, ...CallArgs<RoleCalls[N]>]) => Promise<CallOutput<RoleCalls[N]>>;
};

/** The client helpers of a role, derived from its declared calls: `roleHelpers('schedule').pause(env, type)`. */
export function roleHelpers<K extends CallRole>(role: K): RoleHelpers<K> {
	const arity = roleObjects[role].length;
	const helpers: Record<string, (env: ShardflowEnv, ...rest: unknown[]) => Promise<unknown>> = {};
	for (const [name, declared] of Object.entries(roleCalls) as [RoleCallName, { role: CallRole; helper?: string }][]) {
		if (declared.role !== role || declared.helper === undefined) continue;
		helpers[declared.helper] = (env, ...rest) => (callRole as (...all: unknown[]) => Promise<unknown>)(env, name, rest.slice(0, arity), ...rest.slice(arity));
	}
	return helpers as RoleHelpers<K>;
}
