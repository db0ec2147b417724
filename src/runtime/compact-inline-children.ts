import type { InlineRow } from '../engine/storage/store';
import { inlinePrefix, KV, pack, unpack, type Packed } from './compact-keys';

type StoredInline = { body: Packed; result: Packed; publishAt: number | null };

/** The rows a compact instance keeps for the children it runs inline (`n:<child>:<key>`; compact-instance-store.ts). */
export class CompactInlineChildren {
	constructor(
		private readonly kv: SyncKvStorage,
		private readonly put: (key: string, value: unknown) => void,
	) {}

	writeInlineRow(childId: string, { key, body, result, publishAt }: InlineRow): void {
		this.put(inlinePrefix(childId) + key, { body: pack(body), result: pack(result), publishAt } satisfies StoredInline);
	}

	readInlineRows(childId: string): InlineRow[] {
		const prefix = inlinePrefix(childId);
		return [...this.kv.list<StoredInline>({ prefix })].map(([key, row]) => ({ key: key.slice(prefix.length), body: unpack(row.body) ?? '', result: unpack(row.result), publishAt: row.publishAt }));
	}

	deleteInline(childId: string): void {
		for (const [key] of [...this.kv.list({ prefix: inlinePrefix(childId) })]) this.kv.delete(key);
	}

	/** Each inline row's child and key, and the row. */
	private *inlineRows(): Iterable<{ key: string; childId: string; rowKey: string; row: StoredInline }> {
		for (const [key, row] of this.kv.list<StoredInline>({ prefix: KV.inline })) {
			const rest = key.slice(KV.inline.length);
			const at = rest.indexOf(':');
			yield { key, childId: decodeURIComponent(rest.slice(0, at)), rowKey: rest.slice(at + 1), row };
		}
	}

	inlinePublishes(): { childId: string; publishAt: number }[] {
		const publishes: { childId: string; publishAt: number }[] = [];
		for (const { childId, rowKey, row } of this.inlineRows()) if (rowKey === '' && row.publishAt !== null) publishes.push({ childId, publishAt: row.publishAt });
		return publishes;
	}

	deleteUnpublishedInline(): void {
		const publishing = new Set(this.inlinePublishes().map((p) => p.childId));
		for (const { key, childId } of [...this.inlineRows()]) if (!publishing.has(childId)) this.kv.delete(key);
	}
}
