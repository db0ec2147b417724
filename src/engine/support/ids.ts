import { ErrorCode, ValidationError } from './errors';
import { MAX_IDEMPOTENCY_KEY_LENGTH } from './limits';
import { GROUP_SEPARATOR, splitGroupTag } from './group-id';

const ID_PATTERN = /^[A-Za-z0-9_.:-]{1,100}$/;
/** An id with a group part (`eu.eu~...`, engine/groups/group-id.ts) stays within this, its tag included. */
const MAX_GROUPED_ID = 100;

/** Checks a caller-chosen workflow id; names under `__` belong to the engine (index shards, keys). */
export function assertValidWorkflowId(id: unknown): asserts id is string {
	// An id of a group other than the default starts `<tag>~`; the rest follows the rules of every id.
	if (typeof id === 'string' && id.includes(GROUP_SEPARATOR) && id.length <= MAX_GROUPED_ID) {
		const { rest } = splitGroupTag(id);
		// One group part only: the rest is an id of the default group's form.
		if (!rest.includes(GROUP_SEPARATOR)) {
			assertValidWorkflowId(rest);
			return;
		}
	}
	if (typeof id !== 'string' || !ID_PATTERN.test(id)) {
		throw new ValidationError(ErrorCode.InvalidId, `invalid workflow id ${JSON.stringify(id)?.slice(0, 120)}: use 1-100 characters of A-Z a-z 0-9 _ . : -`);
	}
	// URL normalisation turns /workflows/. and /workflows/.. into other paths, so such an instance could never be reached.
	if (/^\.+$/.test(id)) {
		throw new ValidationError(ErrorCode.InvalidId, `invalid workflow id "${id}": an id made only of dots cannot be addressed in a URL`);
	}
	if (id.startsWith('__')) {
		throw new ValidationError(ErrorCode.ReservedId, `workflow id "${id}" is reserved: ids starting with "__" belong to the engine`);
	}
}

/** A code version label: what the list API's `codeVersion` filter accepts too. */
export const CODE_VERSION_PATTERN = /^[\x21-\x7e]{1,64}$/;

/** A time-ordered unique id (UUIDv7, RFC 9562), used when `create` gets no id. */
export function uuidv7(now: number = Date.now()): string {
	const bytes = new Uint8Array(16);
	crypto.getRandomValues(bytes);
	const ms = BigInt(now);
	for (let i = 0; i < 6; i++) bytes[i] = Number((ms >> BigInt(8 * (5 - i))) & 0xffn);
	bytes[6] = (bytes[6]! & 0x0f) | 0x70;
	bytes[8] = (bytes[8]! & 0x3f) | 0x80;
	const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
	return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const IDEMPOTENCY_KEY_PATTERN = new RegExp(`^[\\x21-\\x7e]{1,${MAX_IDEMPOTENCY_KEY_LENGTH}}$`);

/** Checks an event send's (or a bulk job's) idempotency key: 1-255 visible ASCII characters. */
export function assertValidIdempotencyKey(key: unknown): asserts key is string {
	if (typeof key !== 'string' || !IDEMPOTENCY_KEY_PATTERN.test(key)) {
		throw new ValidationError(
			ErrorCode.InvalidIdempotencyKey,
			`an idempotency key is 1-${MAX_IDEMPOTENCY_KEY_LENGTH} visible ASCII characters (no spaces), got ${JSON.stringify(typeof key === 'string' && key.length > 40 ? `${key.slice(0, 40)}…` : key)}`,
		);
	}
}
