import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { STATUS_BY_CODE, handleError } from '../../src/api/http-errors';
import { ErrorCode, ShardflowError } from '../../src/engine/support/errors';

/** A tiny app that throws the typed error named by the path, through the real onError. */
const app = new Hono().get('/throw/:code', (c) => {
	throw new ShardflowError(c.req.param('code') as ErrorCode, `thrown ${c.req.param('code')}`);
});
app.onError(handleError);

describe('error codes over HTTP', () => {
	it('every engine error code has an HTTP status, so a new code cannot silently become a 400', () => {
		expect(Object.keys(STATUS_BY_CODE).sort()).toEqual(Object.values(ErrorCode).sort());
	});

	it.for(Object.values(ErrorCode))('%s answers its mapped status with a JSON {error:{code,message}} body', async (code) => {
		const res = await app.request(`/throw/${code}`);
		expect(res.status).toBe(STATUS_BY_CODE[code]);
		expect(await res.json()).toEqual({ error: { code, message: `thrown ${code}` } });
	});

	it('only errors raised inside a running workflow, a registry or a wrangler.jsonc that cannot run (the deployment is wrong), a residency group not deployed yet, or internal ones map to 5xx', () => {
		const serverSide = Object.entries(STATUS_BY_CODE).filter(([, status]) => status >= 500).map(([code]) => code).sort();
		expect(serverSide).toEqual(
			[
				ErrorCode.Determinism,
				ErrorCode.StepFailed,
				ErrorCode.StepTimeout,
				ErrorCode.DelayFunctionFailed,
				ErrorCode.EventTimeout,
				ErrorCode.NonRetryable,
				ErrorCode.InvalidRegistry,
				ErrorCode.Misconfigured,
				ErrorCode.StepLimitExceeded,
				ErrorCode.HistoryLimitExceeded,
				ErrorCode.ChildWorkflowFailed,
				// 503: the request is valid and the group one deploy away (docs/residency.md); a client's retry succeeds then.
				ErrorCode.GroupNotDeployed,
				ErrorCode.Internal,
			].sort(),
		);
	});
});
