import { defineRegistry } from 'shardflow/workflow';
import { SignupWorkflow } from './workflows/signup';

/** Every workflow type this Worker runs: add a class here (wrangler.jsonc never changes). */
export const registry = defineRegistry({
	signup: { workflow: SignupWorkflow },
});
