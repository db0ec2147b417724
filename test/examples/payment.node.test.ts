import { testWorkflow } from '../../src/testing';
import { PaymentWorkflow } from '../../examples/demo/workflows/payment-workflow';
import { registry } from '../../examples/demo/workflows/registry';
import { paymentCases } from './payment.cases';

// On plain Node: the pure engine, an in-memory store and a virtual clock, in the deployed registry.
paymentCases(() => testWorkflow(PaymentWorkflow, { registry }));
