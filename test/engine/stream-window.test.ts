import { describe, expect, it } from 'vitest';
import { acknowledged, askIfPaced, fits, openWindow, parseAck, parseWindowParam, recordSent, STREAM_MIN_WINDOW, STREAM_SUBSCRIBER_WINDOW, storedWindow, windowOf } from '../../src/engine/streams/stream-window';

const KiB = 1024;

describe("a stream subscriber's window", () => {
	it('lets no more than the window be sent unacknowledged', () => {
		const window = openWindow(true);
		let seq = 0;
		while (fits(window, 16 * KiB)) recordSent(window, ++seq, 16 * KiB);
		expect(window.unacked).toBeLessThanOrEqual(STREAM_SUBSCRIBER_WINDOW);
		expect(window.unacked + 16 * KiB).toBeGreaterThan(STREAM_SUBSCRIBER_WINDOW);
	});

	it('asks a subscriber that acknowledges for an answer once half the window is out, and the answer frees what came before the request', () => {
		const window = openWindow(true);
		const asks: number[] = [];
		for (let seq = 1; fits(window, 16 * KiB); seq++) if (recordSent(window, seq, 16 * KiB).ask) asks.push(seq);
		expect(asks).toEqual([32]); // 32 x 16 KiB = half of 1 MiB
		const before = window.unacked;
		expect(acknowledged(window, { seq: 32, token: window.asked!.token })).toBe(true);
		expect(window.unacked).toBe(before - 32 * 16 * KiB);
	});

	it('frees nothing for an answer to another request, or twice for the same one', () => {
		const window = openWindow(true);
		for (let seq = 1; seq <= 40; seq++) recordSent(window, seq, 16 * KiB);
		const { token } = window.asked!;
		expect(acknowledged(window, { seq: 31, token })).toBe(false);
		expect(acknowledged(window, { seq: 32, token })).toBe(true);
		expect(acknowledged(window, { seq: 32, token })).toBe(false);
	});

	it('frees nothing for an answer that guesses the seq without the request\'s token (a subscriber that never read it; found from outside)', () => {
		const window = openWindow(true);
		for (let seq = 1; seq <= 40; seq++) recordSent(window, seq, 16 * KiB);
		const before = window.unacked;
		for (const token of ['', 'x', '0000000000000000']) expect(acknowledged(window, { seq: 32, token })).toBe(false);
		expect(window.unacked).toBe(before);
		// Each request has its own token: the answer to one never frees the next.
		const first = window.asked!.token;
		expect(acknowledged(window, { seq: 32, token: first })).toBe(true);
		for (let seq = 41; seq <= 80; seq++) recordSent(window, seq, 16 * KiB);
		expect(window.asked!.token).not.toBe(first);
		expect(acknowledged(window, { seq: window.asked!.seq, token: first })).toBe(false);
	});

	it('never asks one that does not acknowledge', () => {
		const window = openWindow(false);
		for (let seq = 1; fits(window, 16 * KiB); seq++) expect(recordSent(window, seq, 16 * KiB).ask).toBe(false);
		expect(askIfPaced(window, 64)).toBe(false);
	});

	it('stores its bound once per eighth of the window sent, not per record, and a woken window assumes that bound', () => {
		const window = openWindow(true);
		let stores = 0;
		for (let seq = 1; seq <= 1000; seq++) if (recordSent(window, seq, 200).store) stores++;
		// 200 KB sent: past the first bound (0) and then each 128 KiB step.
		expect(stores).toBe(2);
		const woken = windowOf(storedWindow(window));
		expect(woken.unacked).toBeGreaterThanOrEqual(window.unacked);
		expect(woken.unacked - window.unacked).toBeLessThanOrEqual(STREAM_SUBSCRIBER_WINDOW / 8);
		expect(woken.acks).toBe(true);
	});

	it('keeps a request across a wake, so its answer still frees the window', () => {
		const window = openWindow(true);
		for (let seq = 1; seq <= 40; seq++) recordSent(window, seq, 16 * KiB);
		const woken = windowOf(storedWindow(window));
		expect(woken.asked).toEqual({ seq: 32, bytes: 32 * 16 * KiB, token: window.asked!.token });
		expect(acknowledged(woken, { seq: 32, token: window.asked!.token })).toBe(true);
		expect(woken.unacked).toBeLessThanOrEqual(STREAM_SUBSCRIBER_WINDOW / 2);
	});

	it('reads an acknowledgement only from {"ack":<seq>,"token":"<token>"}', () => {
		expect(parseAck('{"ack":12,"token":"ab12"}')).toEqual({ seq: 12, token: 'ab12' });
		for (const other of ['ping', '{"ack":12}', '{"ack":-1,"token":"a"}', '{"ack":"12","token":"a"}', '{"ack":1.5,"token":"a"}', '{"ack":1,"token":1}', '12', 'null', `{"ack":1,"token":"${'a'.repeat(100)}"}`]) expect(parseAck(other)).toBeUndefined();
		expect(parseAck(new ArrayBuffer(4))).toBeUndefined();
	});

	it('takes a smaller window a subscriber that acknowledges asked for (the SSE relay asks for 64 KiB), asks at half of it, and keeps it across a wake', () => {
		const window = openWindow(true, 64 * KiB);
		const asks: number[] = [];
		let seq = 0;
		while (fits(window, 4 * KiB)) if (recordSent(window, ++seq, 4 * KiB).ask) asks.push(seq);
		expect(window.unacked).toBe(64 * KiB);
		expect(asks).toEqual([8]); // 8 x 4 KiB = half of 64 KiB
		expect(windowOf(storedWindow(window)).size).toBe(64 * KiB);
	});

	it('keeps an asked-for window within 16 KiB and 1 MiB, and gives one that does not acknowledge the whole window', () => {
		expect(openWindow(true, 1).size).toBe(STREAM_MIN_WINDOW);
		expect(openWindow(true, 10 * STREAM_SUBSCRIBER_WINDOW).size).toBe(STREAM_SUBSCRIBER_WINDOW);
		expect(openWindow(false, 64 * KiB).size).toBe(STREAM_SUBSCRIBER_WINDOW);
		expect(parseWindowParam(null)).toBeUndefined();
		expect(parseWindowParam('65536')).toBe(65536);
		for (const bad of ['', '-1', '1e5', 'x', '9'.repeat(12)]) expect(() => parseWindowParam(bad)).toThrow(/window must be a whole number/);
	});

	it('sends a record larger than the whole window alone, when nothing else is in flight (else it could never be sent)', () => {
		const window = openWindow(true, 16 * KiB);
		expect(fits(window, 40 * KiB)).toBe(true);
		recordSent(window, 1, 40 * KiB);
		expect(fits(window, 1)).toBe(false);
		expect(window.bound).toBeGreaterThanOrEqual(window.unacked);
	});
});
