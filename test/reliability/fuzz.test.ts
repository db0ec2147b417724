import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { settle, uniqueId } from '../helpers';
import { api } from '../api/helpers';
import { printReport, report } from './report';

afterAll(() => printReport('fuzz'));

const RUNS = Number(process.env.FUZZ_RUNS ?? 1000);

/** Snapshot of one instance and its index entry: a refused request must leave both unchanged. */
async function snapshot(id: string) {
	const detail = (await api('GET', `/workflows/${id}`)).json;
	const listed = (await api('GET', '/workflows?type=payment&limit=1000')).json.items.find((i: { id: string }) => i.id === id);
	return { detail, listed };
}

const segment = fc.oneof(
	fc.constantFrom('workflows', 'types', 'admin', 'events', 'pause', 'resume', 'terminate', 'restart', 'approval', '..', '.', '__index:payment:0', 'openapi.json', ''),
	fc.string({ maxLength: 20 }).map(encodeURIComponent),
	fc.string({ unit: 'binary', maxLength: 12 }).map(encodeURIComponent),
);
const query = fc.dictionary(
	fc.constantFrom('type', 'status', 'limit', 'cursor', 'createdAfter', 'updatedBefore', 'x'),
	fc.oneof(fc.constantFrom('payment', 'test', 'running,waiting', '-1', '0', '1e9', 'abc', '50', 'WzEsMiwzXQ'), fc.string({ maxLength: 30 })),
	{ maxKeys: 4 },
);
const body = fc.oneof(
	fc.constant(undefined),
	fc.json({ maxDepth: 4 }),
	fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify({ type: 'payment', payload: v })),
	fc.string({ maxLength: 200 }),
	fc.constantFrom('{', '{"type":', 'null', '[]', '{"type":"payment","id":"__x","payload":{}}', '{"approved":true,"reviewer":"x"}'),
);
const headers = fc.record(
	{
		'content-type': fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=utf-8', 'multipart/form-data', ''),
		authorization: fc.constantFrom('Bearer x', 'Basic abc', ''),
		'x-extra': fc.string({ maxLength: 20 }).filter((s) => /^[\x21-\x7e]*$/.test(s)),
	},
	{ requiredKeys: [] },
);

describe('REST API fuzzing', () => {
	it(`never answers 5xx, always explains a 4xx as JSON with a code, and a refused request changes nothing (${RUNS} random requests)`, async () => {
		const id = uniqueId('fuzz-target');
		await api('POST', '/workflows', { type: 'payment', id, payload: { amount: 1, currency: 'EUR' } });
		await settle(id);
		const before = await snapshot(id);

		await fc.assert(
			fc.asyncProperty(
				fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH'),
				fc.array(segment, { minLength: 0, maxLength: 4 }),
				fc.boolean(),
				query,
				body,
				headers,
				async (method, segments, targetExisting, params, payload, hdrs) => {
					report.fuzzCases++;
					// Aim some requests at the existing instance, with a control action that must be refused.
					const path = targetExisting
						? `/workflows/${id}/${segments[0] === 'events' ? 'events/approvel' : (segments[0] ?? 'restart') === 'restart' ? 'restart' : 'resume'}`
						: `/${segments.join('/')}`;
					const qs = new URLSearchParams(params).toString();
					const cleanHeaders = Object.fromEntries(Object.entries(hdrs).filter(([, v]) => v !== ''));
					const res = await api(method, `${path}${qs ? `?${qs}` : ''}`, method === 'GET' ? undefined : payload, cleanHeaders);
					expect(res.status, `${method} ${path}?${qs} -> ${res.text.slice(0, 200)}`).toBeLessThan(500);
					if (res.status >= 400) {
						expect(res.json?.error?.code, `${method} ${path}: ${res.text.slice(0, 200)}`).toMatch(/^[A-Z_]+$/);
						expect(typeof res.json.error.message).toBe('string');
					}
				},
			),
			{ numRuns: RUNS, seed: Number(process.env.FUZZ_SEED ?? 42) },
		);

		expect(await snapshot(id)).toEqual(before);
	});
});
