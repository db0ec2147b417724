import { runInDurableObject } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { AlarmMeter, totalAlarmReading } from '../../bench/sql-meter';
import { testEnv } from '../helpers';

// The bench's cost rows count every alarm write as a row written (docs/cost.md): the meter must see the calls the engine
// makes through `ctx.storage`, which it reads anew at each call (runtime/instance-host.ts), not only through the
// reference it was installed on.
describe("the bench's alarm meter", () => {
	it('counts each setAlarm and deleteAlarm made through ctx.storage, and the alarm is still set and deleted', async () => {
		const stub = testEnv.WORKFLOW_RUNNER.get(testEnv.WORKFLOW_RUNNER.idFromName('alarm-meter-1'));
		const seen = await runInDurableObject(stub, async (_, state) => {
			const before = totalAlarmReading();
			const meter = new AlarmMeter(state.storage);
			const at = Date.now() + 3_600_000;
			await state.storage.setAlarm(at);
			const set = await state.storage.getAlarm();
			await state.storage.setAlarm(at + 1);
			await state.storage.deleteAlarm();
			const total = totalAlarmReading();
			return { reading: meter.reading(), set, left: await state.storage.getAlarm(), totalSet: total.set - before.set, totalDeleted: total.deleted - before.deleted };
		});
		expect(seen).toEqual({ reading: { set: 2, deleted: 1 }, set: expect.any(Number), left: null, totalSet: 2, totalDeleted: 1 });
	});
});
