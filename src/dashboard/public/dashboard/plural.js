// A count with its noun, singular for 1 ("1 instance", "2 instances"): shared by the
// server-rendered pages (src/dashboard/views) and the scripts that redraw them, so a
// number reads the same before and after the first refresh. No side effects: Node tests import it.

/**
 * @param {number} n
 * @param {string} one the noun for 1
 * @param {string} [many] the noun for any other count (default: `one` + "s")
 * @returns {string}
 */
export function plural(n, one, many = `${one}s`) {
	return `${n.toLocaleString('en')} ${n === 1 ? one : many}`;
}
