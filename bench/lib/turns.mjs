// The order in which a bench runs its engines (or sides) in one repetition: rotated by one every repetition, so
// that each takes each position as often as the repetitions allow. Whichever runs first after a pause comes out a
// few per cent slower (bench/results/create-interleaved-session8.md: two copies of our engine, each ~5% slower
// whenever it went first); a fixed order charges that to the same engine every time.

/**
 * `items` rotated left by `rep`: repetition 0 keeps the order, 1 starts with the second, and so on.
 * @template T
 * @param {readonly T[]} items
 * @param {number} rep
 * @returns {T[]}
 */
export function inTurn(items, rep) {
	const shift = items.length === 0 ? 0 : rep % items.length;
	return [...items.slice(shift), ...items.slice(0, shift)];
}
