import { CompactValueError, int, num, type Num } from './compact-step-codec';

/**
 * A failed attempt's history detail (`step.attempt_failed`, `step.failed`, a rollback's: `{"error":{...},"retryAt":…}`)
 * in storage format 5's compact encoding (docs/decisions.md "A retried step's attempts in the compact encoding"). A
 * retried step carries one such detail per failed attempt, and every put of the record that holds the step (its
 * `sleeping` statuses, the outcome the step then rides in) carries them all again: as JSON they were ~300 bytes an
 * attempt, most of it the stack, which V8 starts with `name: message` (already stored) and which a step failing again
 * usually repeats frame for frame. So:
 * - the detail's fields by one-letter names, `name` left out when it is `Error`, `retryAt` as a delta from the record's
 *   time (a small integer where the time is a 9-byte double);
 * - the stack as its frames (`f`) when it is `name: message` and a newline then those frames, and as `1` when the frames
 *   are those of the error before it in the same step (the step's own error, then its records in order: `FrameChain`);
 *   any other stack whole (`s`).
 * A detail is encoded only when decoding gives back its text exactly; any other (another shape, another key order) is
 * stored as it is (`d`), so what the history shows never depends on this encoding.
 */
export interface EncodedError {
	/** The error's name, when not `Error`. */
	n?: string;
	m: string;
	c?: string;
	/** The stack's frames, after its `name: message` line; `1`: the frames of the error before it in this step. */
	f?: string | 1;
	/** A stack that is not `name: message` and frames, whole. */
	s?: string;
	/** `retryAt`, against the record's time. */
	w?: Num;
}

/** The frames of the last error encoded (or decoded) in one step's value: the next one may name them by `1`. */
export class FrameChain {
	frames: string | undefined;
}

/** The stack's frames after its `name: message` line, or undefined when it does not start so (or has none). */
export function framesOf(stack: string, name: string, message: string): string | undefined {
	const head = `${message === '' ? name : `${name}: ${message}`}\n`;
	if (!stack.startsWith(head) || stack.length === head.length) return undefined;
	return stack.slice(head.length);
}

/** A stack from its frames (`framesOf`'s inverse). */
export function stackOf(frames: string, name: string, message: string): string {
	return `${message === '' ? name : `${name}: ${message}`}\n${frames}`;
}

interface ErrorDetail {
	error: { name: string; message: string; code?: string; stack?: string };
	retryAt?: number;
}

/** The detail's text as the engine writes it (history.ts: `JSON.stringify` of `{ error, retryAt }`). */
function detailText(detail: ErrorDetail): string {
	const { name, message, code, stack } = detail.error;
	const error = { name, message, ...(code !== undefined ? { code } : {}), ...(stack !== undefined ? { stack } : {}) };
	return JSON.stringify(detail.retryAt !== undefined ? { error, retryAt: detail.retryAt } : { error });
}

/** The detail encoded, or undefined when it is not an error's detail this encoding gives back exactly (store it as it is). */
export function encodeErrorDetail(detail: string, at: number, chain: FrameChain): EncodedError | undefined {
	if (!detail.startsWith('{"error":{')) return undefined;
	let parsed: ErrorDetail;
	try {
		parsed = JSON.parse(detail) as ErrorDetail;
	} catch {
		return undefined;
	}
	const error = parsed.error;
	if (typeof error !== 'object' || error === null || typeof error.name !== 'string' || typeof error.message !== 'string') return undefined;
	if ((error.code !== undefined && typeof error.code !== 'string') || (error.stack !== undefined && typeof error.stack !== 'string')) return undefined;
	if (parsed.retryAt !== undefined && (typeof parsed.retryAt !== 'number' || !Number.isSafeInteger(parsed.retryAt))) return undefined;
	// Another shape (a field more, another order): as it is.
	if (detailText(parsed) !== detail) return undefined;
	const encoded: EncodedError = { m: error.message };
	if (error.name !== 'Error') encoded.n = error.name;
	if (error.code !== undefined) encoded.c = error.code;
	if (error.stack !== undefined) {
		const frames = framesOf(error.stack, error.name, error.message);
		if (frames === undefined) encoded.s = error.stack;
		else {
			encoded.f = frames === chain.frames ? 1 : frames;
			chain.frames = frames;
		}
	}
	if (parsed.retryAt !== undefined) encoded.w = int(parsed.retryAt - at);
	return encoded;
}

export function decodeErrorDetail(encoded: EncodedError, at: number, chain: FrameChain): string {
	const name = encoded.n ?? 'Error';
	let stack = encoded.s;
	if (encoded.f !== undefined) {
		const frames = encoded.f === 1 ? chain.frames : encoded.f;
		if (frames === undefined) throw new CompactValueError('a stored error names the frames of an error before it, and none is there');
		chain.frames = frames;
		stack = stackOf(frames, name, encoded.m);
	}
	return detailText({ error: { name, message: encoded.m, ...(encoded.c !== undefined ? { code: encoded.c } : {}), ...(stack !== undefined ? { stack } : {}) }, ...(encoded.w !== undefined ? { retryAt: num(encoded.w) + at } : {}) });
}
