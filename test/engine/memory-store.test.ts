import { describe } from 'vitest';
import { MemoryInstanceStore } from '../../src/engine/storage/memory-store';
import { storeContract } from '../store-contract';

describe('MemoryInstanceStore', () => {
	storeContract('memory', async (fn) => fn(new MemoryInstanceStore()));
});
