/**
 * `this.env` in a workflow is typed without ceremony: by `Cloudflare.Env`
 * (what `wrangler types` generates into worker-configuration.d.ts) unless
 * the class names its own type as `Workflow`'s third argument. Checked by
 * `tsc --noEmit`; nothing here runs.
 */
import type { Step } from '../../src/engine/definition/types';
import { Workflow } from '../../src/workflow';

// What `wrangler types` writes for a `vars` entry (merged into Cloudflare's global interface).
declare global {
	namespace Cloudflare {
		interface Env {
			GREETING_PREFIX: string;
		}
	}
}

export class FromWranglerTypes extends Workflow<{ name: string }, string> {
	static override readonly type = 'from-wrangler-types';
	async run(step: Step, { name }: { name: string }) {
		const prefix: string = this.env.GREETING_PREFIX;
		// @ts-expect-error: not a binding of this Worker
		this.env.NOT_A_BINDING;
		return step.do('greet', () => `${prefix}, ${name}`);
	}
}

interface BankEnv {
	BANK_URL: string;
	BANK: Fetcher;
}

export class WithItsOwnEnv extends Workflow<{ amount: number }, number, BankEnv> {
	static override readonly type = 'with-its-own-env';
	async run(step: Step, { amount }: { amount: number }) {
		const url: string = this.env.BANK_URL;
		// @ts-expect-error: BankEnv has no GREETING_PREFIX
		this.env.GREETING_PREFIX;
		return step.do('charge', async () => (await this.env.BANK.fetch(`${url}/charge?amount=${amount}`)).status);
	}
}
