import { defineRegistry } from '../../../src/authoring'; // in your own Worker: 'shardflow'
import { HeartbeatWorkflow } from './heartbeat-workflow';
import { PaymentWorkflow } from './payment-workflow';
import { ProgressWorkflow } from './progress-workflow';
import { TestWorkflow } from './test-workflow';

/**
 * Every workflow type this deployment runs. Adding a type is a code change
 * here; `wrangler.jsonc` never changes.
 */
export const registry = defineRegistry({
	test: { workflow: TestWorkflow },
	payment: { workflow: PaymentWorkflow, shards: 4 },
	progress: { workflow: ProgressWorkflow, shards: 2 },
	heartbeat: { workflow: HeartbeatWorkflow, shards: 2 },
});

export type WorkflowType = keyof typeof registry.definitions;
