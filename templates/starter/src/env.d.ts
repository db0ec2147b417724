// The Worker's bindings (wrangler.jsonc), for `this.env` in workflows and `env` from 'cloudflare:workers'.
// Add a line here for each binding or variable you add there.
declare namespace Cloudflare {
	interface Env {
		WORKFLOW_RUNNER: DurableObjectNamespace;
	}
}
