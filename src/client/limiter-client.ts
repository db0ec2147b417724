import type { LimiterInfo } from '../engine/limiter/limiter';
import type { ShardflowEnv } from './instance-client';
import { callRole } from './stubs';

/** Who holds the slots of a concurrency key and who waits, in the order they will start. */
export function limiterInfo(env: ShardflowEnv, type: string, key: string): Promise<LimiterInfo> {
	return callRole(env, 'limiterInfo', [type, key]);
}
