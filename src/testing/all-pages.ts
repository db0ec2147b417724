/**
 * Reads every page of a cursor-paged list (steps, history) into one array:
 * `read` gets the previous page's cursor (null first) and answers a page's
 * items and the next cursor (null after the last page).
 */
export async function allPages<T>(read: (cursor: string | null) => Promise<{ items: readonly T[]; next: string | null }>): Promise<T[]> {
	const all: T[] = [];
	let cursor: string | null = null;
	do {
		const page: { items: readonly T[]; next: string | null } = await read(cursor);
		all.push(...page.items);
		cursor = page.next;
	} while (cursor !== null);
	return all;
}
