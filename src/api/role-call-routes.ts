import { callRole } from '../client/stubs';
import type { Registry } from '../engine/definition/registry';
import { roleCalls, type CallRole, type RoleCallName } from '../operations/role-calls';
import { roleHttpBindings, type RoleHttpBinding } from '../operations/role-http';
import { registerDeclaredRoute } from './declared-routes';
import type { ApiRoutes } from './routes';

/**
 * Adds to `app` one route per call of `role` that has an HTTP binding (`src/operations/role-http.ts`),
 * in the order of src/operations/role-calls.ts: `call` maps the request to the object's address and
 * the call's arguments, `reply` maps what the call answers to the response.
 */
export function addRoleCallRoutes(app: ApiRoutes, registry: Registry, role: CallRole): void {
	for (const name of Object.keys(roleCalls) as RoleCallName[]) {
		const http = roleHttpBindings[name] as RoleHttpBinding<any> | undefined;
		if (!http || roleCalls[name].role !== role) continue;
		registerDeclaredRoute(app, http, async (request, env) => {
			const { address, args } = http.call(request, registry);
			return http.reply(await (callRole as (...all: unknown[]) => Promise<never>)(env, name, address, ...args));
		});
	}
}
