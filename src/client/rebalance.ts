import { decodeBase64UrlJson, encodeBase64UrlJson } from '../engine/base64url-json';
import { ErrorCode, ValidationError } from '../engine/errors';
import type { IndexEntry } from '../engine/index-entry';
import type { Registry } from '../engine/registry';
import { shardIndex } from '../engine/shard';
import { readShards, shardStub } from './index-client';
import type { ShardflowEnv } from './instance-client';
import { unwrap } from './rpc';

export interface RebalanceOptions {
	/** The `cursor` of the previous call; omit to start a pass. */
	cursor?: string | null;
	/** Entries to scan in this call (1-1000, default 200): small enough for one request. */
	batchSize?: number;
}

export interface RebalanceProgress {
	type: string;
	shards: number;
	previousShards: number | null;
	/** Shards fully scanned so far in this pass, out of `totalShards`. */
	shardsDone: number;
	totalShards: number;
	scanned: number;
	moved: number;
	/** Pass back to continue; null once the pass is done. */
	cursor: string | null;
	done: boolean;
	/** True once a full pass has finished while `previousShards` is set. */
	canDropPreviousShards: boolean;
	message: string;
}

interface Position {
	shard: number;
	afterId: string;
}

function encode(position: Position): string {
	return encodeBase64UrlJson([position.shard, position.afterId]);
}

function decode(cursor: string, totalShards: number): Position {
	try {
		const [shard, afterId] = decodeBase64UrlJson(cursor) as unknown[];
		if (Number.isInteger(shard) && (shard as number) >= 0 && (shard as number) < totalShards && typeof afterId === 'string') {
			return { shard: shard as number, afterId };
		}
	} catch {
		// fall through to the error below
	}
	throw new ValidationError(ErrorCode.InvalidCursor, 'invalid rebalance cursor: pass the cursor of the previous rebalance call');
}

/**
 * One resumable, idempotent batch of a rebalance: every live entry whose
 * shard differs under the current `shards` is written to its owning shard
 * (keeping the newer version) and then tombstoned where it was. Finished
 * workflows never write again, so this is what lets `previousShards` go.
 */
export async function rebalance(env: ShardflowEnv, registry: Registry, type: string, options: RebalanceOptions = {}): Promise<RebalanceProgress> {
	const config = registry.get(type);
	const batchSize = options.batchSize ?? 200;
	if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 1000) {
		throw new ValidationError(ErrorCode.InvalidQuery, 'batchSize must be a whole number from 1 to 1000');
	}
	const totalShards = readShards(config).length;
	let position = options.cursor ? decode(options.cursor, totalShards) : { shard: 0, afterId: '' };
	let scanned = 0;
	let moved = 0;
	let done = false;

	while (scanned < batchSize) {
		const want = batchSize - scanned;
		const rows = await unwrap(shardStub(env, type, position.shard).indexScan({ afterId: position.afterId, limit: want }));
		scanned += rows.length;
		const misplaced = rows.filter((row) => shardIndex(row.id, config.shards) !== position.shard);
		moved += await moveEntries(env, type, config.shards, position.shard, misplaced);
		if (rows.length === want) {
			position = { shard: position.shard, afterId: rows.at(-1)!.id };
			break;
		}
		if (position.shard + 1 >= totalShards) {
			done = true;
			break;
		}
		position = { shard: position.shard + 1, afterId: '' };
	}

	const canDrop = done && config.previousShards !== undefined;
	return {
		type,
		shards: config.shards,
		previousShards: config.previousShards ?? null,
		shardsDone: done ? totalShards : position.shard,
		totalShards,
		scanned,
		moved,
		cursor: done ? null : encode(position),
		done,
		canDropPreviousShards: canDrop,
		message: done
			? canDrop
				? `every ${type} entry is in its shard under shards=${config.shards}: remove previousShards from the registry and deploy`
				: `every ${type} entry is in its shard under shards=${config.shards}`
			: 'pass the cursor to continue',
	};
}

async function moveEntries(env: ShardflowEnv, type: string, shards: number, from: number, entries: IndexEntry[]): Promise<number> {
	if (entries.length === 0) return 0;
	const byTarget = new Map<number, IndexEntry[]>();
	for (const entry of entries) {
		const target = shardIndex(entry.id, shards);
		const group = byTarget.get(target);
		if (group) group.push(entry);
		else byTarget.set(target, [entry]);
	}
	// Copy first, then tombstone: an entry is never missing, only briefly in two places (reads de-duplicate).
	await Promise.all([...byTarget].map(([target, batch]) => unwrap(shardStub(env, type, target).indexWrite(batch))));
	await unwrap(shardStub(env, type, from).indexTombstone(entries.map(({ id, version }) => ({ id, version }))));
	return entries.length;
}
