import { describe, expect, it } from 'vitest';
import type { HistoryEvent } from '../../src/engine/history/history';
import type { Step } from '../../src/engine/definition/types';
import { assertReplays, ReplayDivergenceError, replayHistory, testWorkflow, TestKitErrorCode } from '../../src/testing';
import { Workflow } from '../../src/workflow';
import { OrderWorkflow } from './fixtures';

/** Version 1 of a signup: the recorded code. */
class Signup extends Workflow<{ email: string }, string> {
	static override readonly type = 'signup';
	async run(step: Step, { email }: { email: string }) {
		const user = await step.do('create-user', () => ({ id: 7, email }));
		await step.do('send-welcome', () => `sent to ${user.email}`);
		await step.sleep('drip-delay', '1 day');
		await step.do('send-tips', () => 'tips sent');
		return `onboarded ${user.id}`;
	}
}

/** Builds a later version of Signup from the order and names of its steps. */
function signupVersion(steps: string[]) {
	return class extends Workflow<{ email: string }, string> {
		static override readonly type = 'signup';
		async run(step: Step, { email }: { email: string }) {
			let id = 0;
			for (const name of steps) {
				if (name === 'drip-delay') await step.sleep(name, '1 day');
				else {
					const result = await step.do(name, () => ({ id: 7, email }));
					if (name === 'create-user') id = (result as { id: number }).id;
				}
			}
			return `onboarded ${id}`;
		}
	};
}

async function recordedSignup(): Promise<HistoryEvent[]> {
	const signup = testWorkflow(Signup).disableSleeps();
	await signup.start({ email: 'a@example.com' });
	await signup.waitForStatus('completed');
	return signup.history();
}

describe('replayHistory', () => {
	it('replays an unchanged workflow cleanly, without running any step function', async () => {
		const history = await recordedSignup();
		let ran = 0;
		class Counting extends Signup {
			override async run(step: Step, payload: { email: string }) {
				const counting: Step = { ...step, do: (name, fn, options) => step.do(name, (a) => (ran++, fn(a)), options), sleep: step.sleep.bind(step), sleepUntil: step.sleepUntil.bind(step), waitForEvent: step.waitForEvent.bind(step) };
				return super.run(counting, payload);
			}
		}
		const result = await replayHistory(Counting, history);
		expect(result).toEqual({ ok: true, matchedSteps: 4, recordedSteps: 4 });
		expect(ran).toBe(0);
		expect(() => assertReplays(result)).not.toThrow();
	});

	it('catches a renamed step', async () => {
		const result = await replayHistory(signupVersion(['create-user', 'send-welcome-email', 'drip-delay', 'send-tips']), await recordedSignup());
		expect(result.divergence).toMatchObject({
			reason: 'unexpected-step',
			position: 1,
			recorded: { kind: 'do', name: 'send-welcome' },
			requested: { kind: 'do', name: 'send-welcome-email' },
		});
		expect(result.divergence!.message).toBe('recorded step "send-welcome" (do) at position 1, the code asked for "send-welcome-email" (do)');
		expect(() => assertReplays(result)).toThrow(ReplayDivergenceError);
	});

	it('catches a reordered step', async () => {
		const result = await replayHistory(signupVersion(['create-user', 'drip-delay', 'send-welcome', 'send-tips']), await recordedSignup());
		expect(result.divergence).toMatchObject({ reason: 'unexpected-step', position: 1, recorded: { name: 'send-welcome' }, requested: { kind: 'sleep', name: 'drip-delay' } });
	});

	it('catches a removed step, in the middle and at the end', async () => {
		const history = await recordedSignup();
		const middle = await replayHistory(signupVersion(['create-user', 'drip-delay', 'send-tips']), history);
		expect(middle.divergence).toMatchObject({ reason: 'unexpected-step', position: 1, recorded: { name: 'send-welcome' }, requested: { name: 'drip-delay' } });
		const end = await replayHistory(signupVersion(['create-user', 'send-welcome', 'drip-delay']), history);
		expect(end.divergence).toMatchObject({ reason: 'missing-step', position: 3, recorded: { kind: 'do', name: 'send-tips' } });
		expect(end.divergence!.message).toMatch(/the code finished without asking for it/);
	});

	it('catches a step added after a recorded run that had completed', async () => {
		const result = await replayHistory(signupVersion(['create-user', 'send-welcome', 'drip-delay', 'send-tips', 'send-survey']), await recordedSignup());
		expect(result.divergence).toMatchObject({ reason: 'unexpected-step', position: 4, recorded: undefined, requested: { name: 'send-survey' } });
	});

	it('catches code that ends differently with the same steps', async () => {
		class Renumbered extends Signup {
			override async run(step: Step, payload: { email: string }) {
				return (await super.run(step, payload)).replace('onboarded', 'welcomed');
			}
		}
		const result = await replayHistory(Renumbered, await recordedSignup());
		expect(result.divergence).toMatchObject({ reason: 'outcome', recorded: 'onboarded 7', replayed: 'welcomed 7' });
	});

	it('does not call parallel steps whose calls come in another order a divergence', async () => {
		const fanOut = (order: string[]) =>
			class extends Workflow<{}, string[]> {
				static override readonly type = 'fan-out';
				async run(step: Step) {
					await step.do('prepare', () => 1);
					const results = await Promise.all(order.map((name) => step.do(name, async () => name.toUpperCase())));
					await step.do('finish', () => 2);
					return results.sort();
				}
			};
		const recorded = testWorkflow(fanOut(['b', 'c', 'a']));
		await recorded.start({});
		await recorded.waitForStatus('completed');
		const history = await recorded.history();
		expect(await replayHistory(fanOut(['a', 'b', 'c']), history)).toMatchObject({ ok: true, matchedSteps: 5 });
		// A step moved out of the parallel group is still caught.
		const moved = await replayHistory(signupVersion(['prepare', 'finish']), history);
		expect(moved.ok).toBe(false);
	});

	it('replays a run still in progress up to where its history ends, with recorded events and timeouts', async () => {
		const order = testWorkflow(OrderWorkflow).disableSleeps();
		await order.start({ sku: 'book' });
		await order.waitForStatus('waiting');
		expect(await replayHistory(OrderWorkflow, await order.history())).toMatchObject({ ok: true, matchedSteps: 3 });
		await order.clock.advance('3 days');
		await order.waitForStatus('completed');
		expect(await replayHistory(OrderWorkflow, { events: await order.history() })).toMatchObject({ ok: true, matchedSteps: 5 });
	});

	it('follows step.patched: the old branch for a history recorded before the patch, the new one for a history with its marker', async () => {
		class Patched extends Signup {
			override async run(step: Step, { email }: { email: string }) {
				const user = await step.do('create-user', () => ({ id: 7, email }));
				if (await step.patched('verify-email')) await step.do('verify-email', () => 'verified');
				await step.do('send-welcome', () => `sent to ${user.email}`);
				await step.sleep('drip-delay', '1 day');
				await step.do('send-tips', () => 'tips sent');
				return `onboarded ${user.id}`;
			}
		}
		expect(await replayHistory(Patched, await recordedSignup())).toMatchObject({ ok: true, matchedSteps: 4 });
		const patched = testWorkflow(Patched).disableSleeps();
		await patched.start({ email: 'a@example.com' });
		await patched.waitForStatus('completed');
		expect(await replayHistory(Patched, await patched.history())).toMatchObject({ ok: true, matchedSteps: 6 });
		// The same new step without the patch does not replay the old history.
		const unpatched = await replayHistory(signupVersion(['create-user', 'verify-email', 'send-welcome', 'drip-delay', 'send-tips']), await recordedSignup());
		expect(unpatched.divergence).toMatchObject({ position: 1, requested: { name: 'verify-email' } });
	});

	it('needs the payload when the history has no workflow.created record', async () => {
		const history = (await recordedSignup()).filter((e) => e.kind !== 'workflow.created');
		await expect(replayHistory(Signup, history)).rejects.toThrow(expect.objectContaining({ code: TestKitErrorCode.ReplayInput }));
		expect(await replayHistory(Signup, history, { payload: { email: 'a@example.com' } })).toMatchObject({ ok: true });
	});
});

describe('replayHistory input', () => {
	it('refuses a page that is not the last one, records that are not records, and an unknown format version', async () => {
		const kit = testWorkflow(Signup);
		await kit.start({ email: 'a@b.c' });
		const events = await kit.history();
		for (const input of [
			{ events, nextCursor: '2' },
			{ events: [1, 'x', null] },
			{ events: [events[1], events[0]] },
			{ events, formatVersion: '9' },
		]) {
			await expect(replayHistory(Signup, input as never)).rejects.toThrow(expect.objectContaining({ code: TestKitErrorCode.ReplayInput }));
		}
		expect((await replayHistory(Signup, { events, nextCursor: null } as never)).ok).toBe(true);
	});
});
