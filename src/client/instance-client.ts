import { ConfigurationError } from '../engine/support/errors';
import { assertValidWorkflowId } from '../engine/support/ids';
import { operations, type InputOf, type OperationName, type OutputOf } from '../operations/table';
import { unwrap, type InstanceRpc, type RpcResult } from './rpc';
import { groupRouted, type RoutedNamespace } from './group-namespace';

/**
 * The `WorkflowRunner` Durable Object namespace, as far as shardflow uses it. Structural,
 * so the package's declarations need no ambient Workers types: a plain-Node test project
 * type-checks without `@cloudflare/workers-types` or `skipLibCheck`, and a Worker's
 * `DurableObjectNamespace<WorkflowRunner>` fits it as it is.
 */
export interface WorkflowRunnerNamespace {
	idFromName(name: string): unknown;
	get(id: any, options?: any): unknown;
	getByName?(name: string, options?: any): unknown;
	/** The namespace restricted to a jurisdiction (groups with one, docs/residency.md); absent on the Node test kit's stand-in. */
	jurisdiction?(jurisdiction: any): WorkflowRunnerNamespace;
}

/** The one binding every caller needs: the `WorkflowRunner` Durable Object namespace. */
export interface ShardflowEnv {
	WORKFLOW_RUNNER: WorkflowRunnerNamespace;
	/**
	 * Signs listing cursors when set (a secret). Unset, every Worker bound to the
	 * namespace shares a key generated once and kept in the `__keys` object.
	 */
	CURSOR_SECRET?: string;
	/** Signs webhook tokens (`step.webhook`) when set (a secret); unset, a key generated once in `__keys`. */
	WEBHOOK_SECRET?: string;
	/** The public origin (and path, if the API is mounted under one) that webhook URLs start with, e.g. `https://flows.example.com`. */
	PUBLIC_URL?: string;
}

/**
 * The namespace as a stub factory by name: the runtime's own `getByName` (one
 * call, no id object) where it has one, `get(idFromName(name))` otherwise; a name
 * of a group with a jurisdiction through that jurisdiction's namespace (group-namespace.ts).
 */
export function namespace(env: ShardflowEnv): RoutedNamespace {
	const ns = env?.WORKFLOW_RUNNER;
	if (!ns || (typeof ns.getByName !== 'function' && (typeof ns.get !== 'function' || typeof ns.idFromName !== 'function'))) throw missingBinding(ns);
	return groupRouted(ns, (env as { SHARDFLOW_ENV?: unknown }).SHARDFLOW_ENV === 'development');
}

/**
 * The stub of a workflow instance, in the group its id names. Refuses reserved and malformed
 * ids before any object is touched. `locationHint`: where a create places a new object first.
 */
export function instanceStub(env: ShardflowEnv, id: string, options?: { locationHint?: string }): InstanceRpc {
	assertValidWorkflowId(id);
	return namespace(env).getByName(id, options) as InstanceRpc;
}

/**
 * Sends one control operation to the instance its input names: the caller-side
 * checks of the operation (`prepare`), then its RPC method, then the envelope
 * back into a value or a typed error.
 */
export async function callOperation<K extends OperationName>(env: ShardflowEnv, name: K, input: InputOf<K>): Promise<OutputOf<K>> {
	const op = operations[name] as { rpc: string; prepare?: (input: unknown) => { id: string; locationHint?: string } };
	const prepared = op.prepare ? op.prepare(input) : (input as { id: string; locationHint?: string });
	// A create's location hint places its new object (the group's, create-placement.ts); the instance never sees it.
	const { locationHint, ...sent } = prepared;
	const stub = instanceStub(env, prepared.id, locationHint !== undefined ? { locationHint } : undefined) as unknown as Record<string, (input: unknown) => Promise<RpcResult<OutputOf<K>>>>;
	return unwrap(stub[op.rpc]!(locationHint !== undefined ? sent : prepared));
}

let missingBindingLogged = false;

/** A Worker without the `WORKFLOW_RUNNER` binding (or with something else under that name): logged once per isolate. */
function missingBinding(found: unknown): ConfigurationError {
	const error = new ConfigurationError(
		found === undefined
			? 'this Worker has no WORKFLOW_RUNNER binding: add {"durable_objects": {"bindings": [{"name": "WORKFLOW_RUNNER", "class_name": "WorkflowRunner"}]}} to its wrangler.jsonc (a Worker that only calls workflows also needs "script_name" of the Worker that runs them; docs/installing.md)'
			: 'the WORKFLOW_RUNNER binding of this Worker is not a Durable Object namespace: bind it under "durable_objects" to the WorkflowRunner class (docs/installing.md)',
	);
	if (!missingBindingLogged) {
		missingBindingLogged = true;
		// The shape of engine-log.ts's lines, written here: the caller's bundle stays without the logger.
		console.error({ source: 'shardflow', level: 'error', msg: `config.invalid: ${error.message}`, event: 'config.invalid', setting: 'WORKFLOW_RUNNER', errorCode: error.code, error: { name: error.name, message: error.message, code: error.code } });
	}
	return error;
}

/**
 * Untyped control calls, one per operation, taking the operation's input:
 * `instances.status(env, { id })`, `instances.create(env, { type, id, payload })`.
 * The typed ones are the static helpers of `Workflow`.
 */
export const instances = Object.fromEntries(
	(Object.keys(operations) as OperationName[]).map((name) => [name, (env: ShardflowEnv, input: never) => callOperation(env, name, input)]),
) as { [K in OperationName]: (env: ShardflowEnv, input: InputOf<K>) => Promise<OutputOf<K>> };
