import { createApp } from '../../src/api/app';
import { defineRegistry } from '../../src/engine/registry';
import { createWorkflowRunner } from '../../src/runtime/workflow-runner';
import { PaymentWorkflow } from '../../src/workflows/payment-workflow';
import { TestWorkflow } from '../../src/workflows/test-workflow';
import { ChaosWorkflow, HangOnceWorkflow, InboxWorkflow, ManyStepsWorkflow } from './workflows';

/** The Worker under test: the example workflows plus test-only types, all on the real engine. */
export const testRegistry = defineRegistry({
	test: { workflow: TestWorkflow },
	payment: { workflow: PaymentWorkflow, shards: 4 },
	'hang-once': { workflow: HangOnceWorkflow },
	chaos: { workflow: ChaosWorkflow, shards: 8 },
	many: { workflow: ManyStepsWorkflow, shards: 16 },
	inbox: { workflow: InboxWorkflow },
});

export class WorkflowRunner extends createWorkflowRunner(testRegistry) {}

export default createApp(testRegistry);
