import { env } from 'cloudflare:workers';
import { afterEach } from 'vitest';
import type { ShardflowEnv } from '../../src/client/instance-client';
import { testKitClock, testWorkflow } from '../../src/testing/workerd';
import { PaymentWorkflow } from '../../examples/demo/workflows/payment-workflow';
import { paymentCases } from './payment.cases';

// Inside workerd: the real WorkflowRunner of the test Worker (built with testKitRunnerOptions) and Drizzle storage.
afterEach(() => testKitClock.reset());
paymentCases(() => testWorkflow(PaymentWorkflow, { env: env as unknown as ShardflowEnv }));
