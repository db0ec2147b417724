import type { ErrorBody } from '../engine/support/errors';
import { ConfigurationError, errorFromBody, toErrorBody, ShardflowError } from '../engine/support/errors';
import type { CallArgs, CallOutput, CallRole, RoleCallName, RoleCalls } from '../operations/role-calls';
import type { InputOf, OperationName, Operations, OutputOf } from '../operations/table';

/**
 * Every RPC method of `WorkflowRunner` answers with this envelope instead of
 * throwing: a thrown error loses its class and code on the way across RPC.
 */
export type RpcResult<T> = { ok: true; value: T } | { ok: false; error: ErrorBody };

/**
 * The RPC surface of a `WorkflowRunner` in its workflow-instance role: one
 * method per control operation (`src/operations/table.ts`), named by its `rpc`.
 */
export type InstanceRpc = {
	[K in OperationName as Operations[K]['rpc']]: (input?: InputOf<K>) => Promise<RpcResult<OutputOf<K>>>;
};

/** Turns an RPC envelope back into a value or a typed error. */
export async function unwrap<T>(result: Promise<RpcResult<T>> | RpcResult<T>): Promise<T> {
	let settled: RpcResult<T>;
	try {
		settled = await result;
	} catch (error) {
		throw deploymentError(error);
	}
	if (!settled.ok) throw errorFromBody(settled.error);
	return settled.value;
}

/**
 * The runtime's refusal of a `WorkflowRunner` class deployed without SQLite storage (declared under
 * `new_classes`): it breaks the object before any shardflow code can answer, so the caller turns it
 * into a typed error that says what to change. Anything else is passed on as it is.
 */
function deploymentError(error: unknown): unknown {
	if (!(error instanceof Error) || !error.message.includes('SQL is not enabled for this Durable Object class')) return error;
	return new ConfigurationError(
		'the WorkflowRunner Durable Object class has no SQLite storage: declare it in a migration of wrangler.jsonc with "new_sqlite_classes": ["WorkflowRunner"], not "new_classes" (a class deployed with key-value storage cannot be converted: deploy the runner under a new class name); docs/installing.md',
		{ cause: error },
	);
}

/** Runs `fn` and wraps its outcome for RPC; unexpected errors are logged and reported as INTERNAL. */
export async function wrap<T>(fn: () => T | Promise<T>): Promise<RpcResult<T>> {
	try {
		return { ok: true, value: await fn() };
	} catch (error) {
		// The shape of engine-log.ts's lines, written here: the caller's bundle stays without the logger.
		if (!(error instanceof ShardflowError)) {
			const { name, message, stack } = error instanceof Error ? error : { name: 'Error', message: 'a thrown value that is no Error', stack: undefined };
			console.error({ source: 'shardflow', level: 'error', msg: `rpc.unexpected_error: ${name}: ${message}`, event: 'rpc.unexpected_error', error: { name, message, stack } });
		}
		return { ok: false, error: toErrorBody(error) };
	}
}

/**
 * The RPC surface of a `WorkflowRunner` in one of its other roles: one method per call
 * declared for that role in `src/operations/role-calls.ts`, named by its key there.
 */
export type RoleRpc<K extends CallRole> = {
	[N in RoleCallName as RoleCalls[N]['role'] extends K ? N : never]: (...args: CallArgs<RoleCalls[N]>) => Promise<RpcResult<CallOutput<RoleCalls[N]>>>;
};

/** An index shard (`__index:<type>:<n>`). */
export type IndexRpc = RoleRpc<'index'>;
/** A type's delivery backlog (`__backlog:<type>`). */
export type BacklogRpc = RoleRpc<'backlog'>;
/** A type's schedule (`__schedule:<type>`). */
export type ScheduleRpc = RoleRpc<'schedule'>;
/** A concurrency limiter (`__limit:<type>:<key>`). */
export type LimiterRpc = RoleRpc<'limiter'>;
/** A bulk operation (`__bulk:<id>`). */
export type BulkRpc = RoleRpc<'bulk'>;
/** The engine's key store (`__keys`). */
export type KeysRpc = RoleRpc<'keys'>;
