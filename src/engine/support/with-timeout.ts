/** `work`, or a rejection once `ms` have passed without it settling (the work itself is not cancelled). */
export function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
	let timer: ReturnType<typeof setTimeout>;
	return Promise.race([
		work,
		new Promise<never>((_, reject) => {
			timer = setTimeout(() => reject(new Error(`call timed out after ${ms} ms`)), ms);
		}),
	]).finally(() => clearTimeout(timer));
}
