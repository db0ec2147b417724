import { describe } from 'vitest';
import { MemoryInstanceStore } from '../../src/engine/memory-store';
import { storeContract } from '../store-contract';

describe('MemoryInstanceStore', () => {
	storeContract('memory', async (fn) => fn(new MemoryInstanceStore()));
});
