import { backlogName, bulkName, KEYS_OBJECT, limiterName, scheduleName, shardName } from '../engine/object-names';
import { namespace, type ShardflowEnv } from './instance-client';
import type { BacklogRpc, BulkRpc, IndexRpc, KeysRpc, LimiterRpc, ScheduleRpc } from './rpc';

// The stubs of the engine's own objects, by role; their names come from engine/object-names.ts and
// their methods from src/operations/role-calls.ts. An instance's stub is `instanceStub` (instance-client.ts).

/** Shard `n` of a type's index. */
export function shardStub(env: ShardflowEnv, type: string, n: number): IndexRpc {
	return namespace(env).getByName(shardName(type, n)) as IndexRpc;
}

/** A type's delivery backlog. */
export function backlogStub(env: ShardflowEnv, type: string): BacklogRpc {
	return namespace(env).getByName(backlogName(type)) as BacklogRpc;
}

/** The engine's key store. */
export function keysStub(env: ShardflowEnv): KeysRpc {
	return namespace(env).getByName(KEYS_OBJECT) as KeysRpc;
}

/** A type's schedule. */
export function scheduleStub(env: ShardflowEnv, type: string): ScheduleRpc {
	return namespace(env).getByName(scheduleName(type)) as ScheduleRpc;
}

/** The limiter of one concurrency key of a type. */
export function limiterStub(env: ShardflowEnv, type: string, key: string): LimiterRpc {
	return namespace(env).getByName(limiterName(type, key)) as LimiterRpc;
}

/** A bulk operation (a job started by `bulk.start`). */
export function bulkStub(env: ShardflowEnv, id: string): BulkRpc {
	return namespace(env).getByName(bulkName(id)) as BulkRpc;
}
