import { decodeBase64UrlJson, encodeBase64UrlJson } from '../engine/support/base64url-json';
import { ErrorCode, ValidationError } from '../engine/support/errors';
import type { IndexEntry } from '../engine/index/index-entry';
import type { Registry } from '../engine/definition/registry';
import { readShards } from '../engine/index/shard';
import type { ShardflowEnv } from './instance-client';
import { callRole } from './stubs';
import { groupTagOf } from './group-scope';

/**
 * One resumable batch of a walk over every shard of a type (current and
 * previous layout) in id order: what rebalance, reconcile and purge are built on.
 * The cursor names the walk it belongs to and, outside the default group, the group whose
 * index it walks (docs/residency.md), so one walk's cursor is refused by another, and one
 * group's by another group's walk, as listing cursors are (INVALID_CURSOR): taken elsewhere, it
 * would skip shards and report the pass done.
 */
export interface ShardWalkOptions {
	/** The `cursor` of the previous call; omit to start a pass. */
	cursor?: string | null;
	/** Entries to visit in this call (1-1000, default 200): small enough for one request. */
	batchSize?: number;
}

export interface ShardWalkBatch {
	/** Live entries visited in this call. */
	scanned: number;
	/** Shards fully walked so far in this pass, out of `totalShards`. */
	shardsDone: number;
	totalShards: number;
	/** Pass back to continue; null once the pass is done. */
	cursor: string | null;
	done: boolean;
}

interface Position {
	shard: number;
	afterId: string;
}

export async function walkShards(
	env: ShardflowEnv,
	registry: Registry,
	type: string,
	walk: 'rebalance' | 'reconcile' | 'purge',
	options: ShardWalkOptions,
	visit: (shard: number, rows: IndexEntry[]) => Promise<void>,
): Promise<ShardWalkBatch> {
	const config = registry.get(type);
	const batchSize = options.batchSize ?? 200;
	if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 1000) {
		throw new ValidationError(ErrorCode.InvalidQuery, 'batchSize must be a whole number from 1 to 1000');
	}
	const totalShards = readShards(config).length;
	const group = groupTagOf(env);
	let position = options.cursor ? decode(options.cursor, walk, group, totalShards) : { shard: 0, afterId: '' };
	let scanned = 0;
	let done = false;
	while (scanned < batchSize) {
		const want = batchSize - scanned;
		const { shard } = position;
		const rows = await callRole(env, 'indexScan', [type, shard], { afterId: position.afterId, limit: want });
		scanned += rows.length;
		await visit(shard, rows);
		if (rows.length === want) {
			position = { shard, afterId: rows.at(-1)!.id };
			break;
		}
		if (shard + 1 >= totalShards) {
			done = true;
			break;
		}
		position = { shard: shard + 1, afterId: '' };
	}
	return {
		scanned,
		shardsDone: done ? totalShards : position.shard,
		totalShards,
		// The default group's cursor is as it was before groups (one of an older build still works).
		cursor: done ? null : encodeBase64UrlJson(group === null ? [walk, position.shard, position.afterId] : [walk, position.shard, position.afterId, group]),
		done,
	};
}

/**
 * A walk's closing message says only what the walk saw: a pass begun without a
 * cursor covered every shard; one that ends on a cursor covered what lay after
 * it, which is all of the pass only if that cursor came from the same pass
 * (cursors are not signed: a made-up one scans nothing and must not claim more).
 */
export function doneMessage(done: boolean, cursor: string | null | undefined, did: string): string {
	if (!done) return 'pass the cursor to continue';
	return cursor ? `pass done: it ${did} after the given cursor (all of them, if every cursor of this pass was passed on unchanged)` : `pass done: it ${did}`;
}

function decode(cursor: string, walk: string, group: string | null, totalShards: number): Position {
	let decoded: unknown[] | undefined;
	try {
		decoded = decodeBase64UrlJson(cursor) as unknown[];
	} catch {
		// refused below
	}
	if (Array.isArray(decoded) && decoded.length <= 4) {
		const [tag, shard, afterId, cursorGroup = null] = decoded;
		if (tag === walk && Number.isInteger(shard) && (shard as number) >= 0 && (shard as number) < totalShards && typeof afterId === 'string') {
			if (cursorGroup !== group) {
				const name = (g: unknown) => (g === null ? 'the default group' : `group ${JSON.stringify(g).slice(0, 40)}`);
				throw new ValidationError(ErrorCode.InvalidCursor, `invalid ${walk} cursor: it belongs to a walk of ${name(cursorGroup)}, not of ${name(group)}; pass the cursor of the previous ${walk} call with the same group`);
			}
			return { shard: shard as number, afterId };
		}
	}
	throw new ValidationError(ErrorCode.InvalidCursor, `invalid ${walk} cursor: pass the cursor of the previous ${walk} call`);
}
