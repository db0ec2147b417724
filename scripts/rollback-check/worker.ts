import { createApp, createWorkflowRunner } from '../../src/host';
import { registry } from './workflows';

/** The deploy-rollback check's Worker (scripts/rollback-check.mjs): the same file is served by each build under test. */
export class WorkflowRunner extends createWorkflowRunner(registry) {}
export default createApp(registry);
