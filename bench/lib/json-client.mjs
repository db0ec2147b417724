// The bench drivers' HTTP client of the bench Worker: JSON in, JSON out, and a failed request
// thrown with its method, path, status and the start of its body.

/**
 * @param {string} base the server's URL
 * @returns {{ call: (method: string, path: string, body?: unknown) => Promise<any>, post: (path: string, body?: unknown) => Promise<any>, get: (path: string) => Promise<any> }}
 */
export function jsonClient(base) {
	/** @param {string} method @param {string} path @param {unknown} [body] */
	const call = async (method, path, body) => {
		const res = await fetch(`${base}${path}`, {
			method,
			headers: body === undefined ? {} : { 'content-type': 'application/json' },
			body: body === undefined ? undefined : JSON.stringify(body),
		});
		const text = await res.text();
		if (!res.ok) throw new Error(`${method} ${path} -> ${res.status}: ${text.slice(0, 300)}`);
		return JSON.parse(text);
	};
	return { call, post: (path, body = {}) => call('POST', path, body), get: (path) => call('GET', path) };
}
