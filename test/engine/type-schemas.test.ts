import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { typeSchemas } from '../../src/engine/definition/type-schemas';

const workflow = (payload: unknown, events: Record<string, unknown>) => ({ type: 't', workflow: { type: 't', payload, events } as any });

describe('typeSchemas', () => {
	it("derives the payload's and each event's JSON Schema from their Standard Schema validators", async () => {
		const schemas = await typeSchemas(workflow(z.object({ n: z.number().int() }), { go: z.object({ ok: z.boolean() }) }));
		expect(schemas).toEqual({
			type: 't',
			attributes: {},
			payload: { required: true, schema: { type: 'object', properties: { n: { type: 'integer', minimum: Number.MIN_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER } }, required: ['n'] } },
			events: [{ name: 'go', required: true, schema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] } }],
		});
	});

	it('says that a type-only marker has no schema, and that it still needs a payload', async () => {
		const { events } = await typeSchemas(workflow(undefined, { marker: {} as { reason: string } }));
		expect(events).toEqual([{ name: 'marker', required: true, schema: null, note: expect.stringMatching(/type only/) }]);
	});

	it('marks an event that carries nothing as not required', async () => {
		const { events } = await typeSchemas(workflow(undefined, { ring: z.undefined(), maybe: z.object({}).optional() }));
		expect(events.map(({ name, required }) => ({ name, required }))).toEqual([
			{ name: 'ring', required: false },
			{ name: 'maybe', required: false },
		]);
	});

	it("names the type's search attributes and their kinds", async () => {
		const schemas = await typeSchemas({ ...workflow(undefined, {}), attributes: { customerId: 'keyword', amount: 'number' } });
		expect(schemas.attributes).toEqual({ customerId: 'keyword', amount: 'number' });
	});

	it('describes a validator without JSON Schema output instead of failing', async () => {
		const bare = { '~standard': { version: 1, vendor: 'x', validate: (v: unknown) => ({ value: v }) } };
		const { payload } = await typeSchemas(workflow(bare, {}));
		expect(payload).toEqual({ schema: null, required: false, note: expect.stringMatching(/Standard JSON Schema/) });
	});
});
