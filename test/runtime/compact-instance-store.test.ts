import { runInDurableObject } from 'cloudflare:test';
import { describe } from 'vitest';
import { CompactInstanceStore } from '../../src/runtime/compact-instance-store';
import { stub, uniqueId } from '../helpers';
import { storeContract } from '../store-contract';

describe('CompactInstanceStore', () => {
	storeContract('compact', (fn) => runInDurableObject(stub(uniqueId('store')), async (_, state) => fn(new CompactInstanceStore(state.storage))));
	// A store told that its object is new answers its first reads without a storage call.
	storeContract('compact on a new object', (fn) => runInDurableObject(stub(uniqueId('store')), async (_, state) => fn(new CompactInstanceStore(state.storage, { empty: true }))));
});
