import { beforeEach, describe, expect, it } from 'vitest';
import { ErrorCode, WebhookExpiredError } from '../../src/engine/support/errors';
import type { Step } from '../../src/engine/definition/types';
import type { Duration } from '../../src/engine/support/duration';
import { decodeWebhookToken, encodeWebhookToken, importWebhookKey, WEBHOOK_PATH, webhookUrl, type WebhookTarget } from '../../src/engine/webhooks/webhook';
import { Workflow } from '../../src/workflow';
import { registryOf } from './start-instance';
import { VirtualHost } from '../../src/testing/virtual-host';

/** URLs the workflow sent out, in order. */
let sent: string[] = [];
beforeEach(() => {
	sent = [];
});

/** Asks for an approval by webhook: the URL goes out in a step, then the run waits for the one POST. */
class HookApproval extends Workflow<{ timeout?: Duration }, unknown> {
	static override readonly type = 'hook-approval';
	async run(step: Step, { timeout }: { timeout?: Duration }) {
		const hook = await step.webhook<{ approved: boolean }>('approval', timeout ? { timeout } : {});
		await step.do('send', () => (sent.push(hook.url), hook.url));
		try {
			return await hook.wait();
		} catch (error) {
			if (error instanceof WebhookExpiredError) return 'expired';
			throw error;
		}
	}
}

const key = await importWebhookKey('test-webhook-secret');

async function start(payload: { timeout?: string } = {}) {
	const host = new VirtualHost({ registry: registryOf(HookApproval) });
	Object.assign(host, { webhooks: { issue: async (target: WebhookTarget) => webhookUrl(await encodeWebhookToken(key, target), 'https://flows.example.com') } });
	const engine = host.engine();
	await engine.create('wf-1', 'hook-approval', payload);
	await host.idle();
	return { host, engine };
}

const targetOf = (url: string) => decodeWebhookToken(key, url.slice(url.indexOf(WEBHOOK_PATH) + WEBHOOK_PATH.length));

describe('step.webhook', () => {
	it('stores the URL before run() uses it, shows it in the status while pending, and one POST completes the wait with its body', async () => {
		const { host, engine } = await start();
		expect(sent).toHaveLength(1);
		expect(sent[0]).toMatch(/^https:\/\/flows\.example\.com\/webhooks\/[\w-]+\.[\w-]{43}$/);
		const status = engine.status();
		expect(status.status).toBe('waiting');
		expect(status.webhooks).toEqual([{ step: 'approval', url: sent[0], expiresAt: null }]);
		engine.completeWebhook(await targetOf(sent[0]!), { approved: true });
		await host.idle();
		expect(engine.status()).toMatchObject({ status: 'completed', output: { approved: true } });
		expect(engine.status().webhooks).toBeUndefined();
		const kinds = engine.history({ limit: 1000 }).events.map((e) => e.kind);
		expect(kinds).toContain('webhook.created');
		expect(engine.history({ limit: 1000 }).events.find((e) => e.kind === 'webhook.received')).toMatchObject({ step: 'approval', payload: { approved: true } });
	});

	it('a replay after an eviction keeps the same URL: it is issued once', async () => {
		const { host } = await start();
		const later = host.engine();
		later.kick();
		await host.idle();
		expect(later.status().webhooks).toEqual([{ step: 'approval', url: sent[0], expiresAt: null }]);
		expect(new Set(sent).size).toBe(1);
	});

	it('refuses a second call with WEBHOOK_USED and changes nothing', async () => {
		const { host, engine } = await start();
		const target = await targetOf(sent[0]!);
		engine.completeWebhook(target, { approved: true });
		await host.idle();
		const before = engine.history({ limit: 1000 }).events.length;
		expect(() => engine.completeWebhook(target, { approved: false })).toThrow(expect.objectContaining({ code: ErrorCode.WebhookUsed }));
		expect(engine.history({ limit: 1000 }).events.length).toBe(before);
		expect(engine.status().output).toEqual({ approved: true });
	});

	it('refuses a call after the timeout with WEBHOOK_EXPIRED, before and after the alarm, and the wait throws a catchable WebhookExpiredError', async () => {
		const { host, engine } = await start({ timeout: '1 hour' });
		const target = await targetOf(sent[0]!);
		expect(engine.status().webhooks?.[0]?.expiresAt).toBe(host.now() + 3_600_000);
		host.advance(3_600_000);
		expect(() => engine.completeWebhook(target, { approved: true })).toThrow(expect.objectContaining({ code: ErrorCode.WebhookExpired }));
		await host.fireAlarm(engine);
		expect(engine.status()).toMatchObject({ status: 'completed', output: 'expired' });
		expect(engine.history({ limit: 1000 }).events.some((e) => e.kind === 'webhook.timed_out')).toBe(true);
		expect(() => engine.completeWebhook(target, { approved: true })).toThrow(expect.objectContaining({ code: ErrorCode.WebhookExpired }));
	});

	it('refuses a token of another incarnation of the step (its nonce) with WEBHOOK_NOT_FOUND', async () => {
		const { engine } = await start();
		const target = await targetOf(sent[0]!);
		expect(() => engine.completeWebhook({ ...target, nonce: 'AAAAAAAAAAAAAAAAAAAAAA' }, {})).toThrow(expect.objectContaining({ code: ErrorCode.WebhookNotFound }));
		expect(() => engine.completeWebhook({ ...target, generation: 1 }, {})).toThrow(expect.objectContaining({ code: ErrorCode.WebhookNotFound }));
		expect(() => engine.completeWebhook({ ...target, step: 'other' }, {})).toThrow(expect.objectContaining({ code: ErrorCode.WebhookNotFound }));
		expect(engine.status().status).toBe('waiting');
	});

	it('refuses a body over the payload limit with TOO_LARGE and keeps the webhook usable', async () => {
		const { host, engine } = await start();
		const target = await targetOf(sent[0]!);
		expect(() => engine.completeWebhook(target, { blob: 'x'.repeat(1024 * 1024 + 1) })).toThrow(expect.objectContaining({ code: ErrorCode.TooLarge }));
		engine.completeWebhook(target, { approved: false });
		await host.idle();
		expect(engine.status().output).toEqual({ approved: false });
	});

	it('refuses a call once the instance was terminated', async () => {
		const { engine } = await start();
		engine.terminate();
		expect(() => engine.completeWebhook({ id: 'wf-1', generation: 0, step: 'approval', nonce: 'x' }, {})).toThrow(
			expect.objectContaining({ code: ErrorCode.WebhookNotFound }),
		);
		const target = await targetOf(sent[0]!);
		expect(() => engine.completeWebhook(target, {})).toThrow(expect.objectContaining({ code: ErrorCode.WebhookExpired }));
		// Nor does the status of a finished instance offer a URL that can only answer 410.
		expect(engine.status().webhooks).toBeUndefined();
	});
});

describe('webhook tokens', () => {
	it('round-trip the target they were signed for', async () => {
		const target = { id: 'order-1', generation: 2, step: 'approval', nonce: 'n1' };
		expect(await decodeWebhookToken(key, await encodeWebhookToken(key, target))).toEqual(target);
	});

	it.for([
		['an altered body', (t: string) => `${t.split('.')[0]!.slice(0, -2)}xx.${t.split('.')[1]}`],
		['an altered signature', (t: string) => `${t.split('.')[0]}.${'A'.repeat(43)}`],
		// A 32-byte signature leaves 2 unused bits in its last character: a neighbour decodes to the same bytes.
		['a last character changed within its unused bits', (t: string) => {
			const last = t.at(-1)!;
			const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
			return `${t.slice(0, -1)}${alphabet[alphabet.indexOf(last) ^ 1]}`;
		}],
		['a cut token', (t: string) => t.slice(0, 20)],
		['an empty token', () => ''],
	] as const)('refuse %s with WEBHOOK_INVALID', async ([, alter]) => {
		const token = await encodeWebhookToken(key, { id: 'order-1', generation: 0, step: 'approval', nonce: 'n1' });
		await expect(decodeWebhookToken(key, alter(token))).rejects.toMatchObject({ code: ErrorCode.WebhookInvalid });
	});

	it('refuse a token signed with another key', async () => {
		const other = await importWebhookKey('another-secret');
		const token = await encodeWebhookToken(other, { id: 'order-1', generation: 0, step: 'approval', nonce: 'n1' });
		await expect(decodeWebhookToken(key, token)).rejects.toMatchObject({ code: ErrorCode.WebhookInvalid });
	});
});
