/** Polls `fn` until it returns something other than undefined (errors count as not yet), or fails naming `what`. */
export async function until<T>(what: string, fn: () => Promise<T | undefined>, ms = 30_000, everyMs = 100): Promise<T> {
	for (const deadline = Date.now() + ms; Date.now() < deadline; ) {
		const value = await fn().catch(() => undefined);
		if (value !== undefined) return value;
		await new Promise((r) => setTimeout(r, everyMs));
	}
	throw new Error(`timed out: ${what}`);
}
