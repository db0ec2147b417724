// The few statistics the bench drivers share.

/** @template T @param {() => Promise<T>} fn @returns {Promise<{ ms: number, value: T }>} how long `fn` took */
export async function timed(fn) {
	const t0 = performance.now();
	const value = await fn();
	return { ms: performance.now() - t0, value };
}

/** @param {number[]} values @param {number} q a fraction, 0.95 for p95 */
export const quantile = (values, q) => {
	const sorted = [...values].sort((a, b) => a - b);
	return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
};

/** @param {number[]} values */
export const median = (values) => quantile(values, 0.5);
