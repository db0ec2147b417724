// The Worker the workerd tests run (vitest.config.ts): your registry, with the test kit's clock and step mocks.
import { createApp, createWorkflowRunner } from 'shardflow';
import { testKitClock, testKitRunnerOptions } from 'shardflow/testing/runner';
import { registry } from '../src/registry';

export class WorkflowRunner extends createWorkflowRunner(registry, testKitRunnerOptions) {}
export default createApp(registry, { clock: testKitClock.now });
