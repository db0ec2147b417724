import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The production-limits harness's counter of subrequests per invocation, in the
 * test Worker: production bounds each invocation (an RPC call, a fetch, an alarm)
 * to 10,000 subrequests (50 external on the free plan), counted across all the
 * work it started, background included. workerd counts nothing; here every
 * `fetch` made while an object's invocation runs is added to that invocation.
 * Requests to `http://outside.test/` are answered here (a stand-in for an
 * outside API; `/delay/<ms>` answers after <ms>), so a workflow can make thousands of them offline.
 */
export interface Invocation {
	object: string;
	kind: string;
	subrequests: number;
}

const current = new AsyncLocalStorage<Invocation>();
/** Every invocation counted, per object name, in the order they began. */
export const invocations = new Map<string, Invocation[]>();

/** Runs `fn` as one invocation of `object`; its fetches (and those of the work it starts) are counted. */
export function asInvocation<T>(object: string, kind: string, fn: () => T): T {
	const invocation: Invocation = { object, kind, subrequests: 0 };
	invocations.set(object, [...(invocations.get(object) ?? []), invocation]);
	return current.run(invocation, fn);
}

const realFetch = globalThis.fetch;
globalThis.fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
	const invocation = current.getStore();
	if (invocation) invocation.subrequests++;
	const url = new URL(input instanceof Request ? input.url : String(input));
	if (url.hostname === 'outside.test') {
		// /delay/<ms>: an outside API that takes <ms> to answer (the cost figures' I/O-bound steps). Any other path answers
		// on the next turn of the event loop: a real subrequest's answer never arrives within the caller's microtasks.
		const delay = /^\/delay\/(\d+)$/.exec(url.pathname);
		await new Promise((resolve) => setTimeout(resolve, delay ? Number(delay[1]) : 0));
		return new Response(`answered ${url.pathname}`);
	}
	return realFetch(input, init);
}) as typeof fetch;
