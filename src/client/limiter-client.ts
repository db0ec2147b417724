import { limiterName } from '../engine/concurrency';
import type { LimiterInfo } from '../engine/limiter';
import { namespace, type ShardflowEnv } from './instance-client';
import { unwrap, type LimiterRpc } from './rpc';

/** The stub of the limiter of one concurrency key of a type. */
export function limiterStub(env: ShardflowEnv, type: string, key: string): LimiterRpc {
	return namespace(env).getByName(limiterName(type, key)) as LimiterRpc;
}

/** Who holds the slots of a concurrency key and who waits, in the order they will start. */
export function limiterInfo(env: ShardflowEnv, type: string, key: string): Promise<LimiterInfo> {
	return unwrap(limiterStub(env, type, key).limiterInfo());
}
