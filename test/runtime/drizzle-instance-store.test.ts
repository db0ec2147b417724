import { runInDurableObject } from 'cloudflare:test';
import { drizzle } from 'drizzle-orm/durable-sqlite';
import { migrate } from 'drizzle-orm/durable-sqlite/migrator';
import { describe } from 'vitest';
import migrations from '../../drizzle/migrations';
import * as schema from '../../src/db/schema';
import { DrizzleInstanceStore } from '../../src/runtime/drizzle-instance-store';
import { stub, uniqueId } from '../helpers';
import { storeContract } from '../store-contract';

describe('DrizzleInstanceStore', () => {
	storeContract('drizzle', (fn) =>
		runInDurableObject(stub(uniqueId('store')), async (_, state) => {
			const db = drizzle(state.storage, { schema });
			await migrate(db, migrations);
			await fn(new DrizzleInstanceStore(db, state.storage));
		}),
	);
});
