import { callOperation } from '../client/instance-client';
import type { Registry } from '../engine/definition/registry';
import { httpBindings, type HttpBinding } from '../operations/http';
import { operations, type OperationName } from '../operations/table';
import { registerDeclaredRoute } from './declared-routes';
import { apiRoutes, type ApiRoutes } from './routes';

/**
 * One route per operation that has an HTTP binding (`src/operations/http.ts`), in table order:
 * its `input` maps the request to the operation's input, `reply` maps the output to the response.
 */
export function operationRoutes(registry: Registry): ApiRoutes {
	const app = apiRoutes();
	for (const name of Object.keys(operations) as OperationName[]) {
		const http = httpBindings[name] as HttpBinding<any, any> | undefined;
		if (!http) continue;
		registerDeclaredRoute(app, http, async (request, env) => {
			const input = http.input(request, registry);
			return http.reply(await callOperation(env, name, input), input);
		});
	}
	return app;
}
