import { ErrorCode, ValidationError } from '../support/errors';

/** A UTF-16 surrogate with no partner: a string cut inside an emoji, for example. */
const UNPAIRED_SURROGATE = /\p{Surrogate}/u;

/**
 * A step's name: 1-256 characters of well-formed text. SQLite stores text as UTF-8, which has
 * no form for an unpaired surrogate: such a name would be stored changed, and the next replay,
 * asking for the name as the code spells it, would find another step there (`diverged`).
 */
export function assertValidStepName(name: unknown): asserts name is string {
	if (typeof name !== 'string' || name.length === 0 || name.length > 256) {
		throw new ValidationError(ErrorCode.InvalidOptions, `step names must be 1-256 characters, got ${JSON.stringify(name)}`);
	}
	if (UNPAIRED_SURROGATE.test(name)) {
		throw new ValidationError(
			ErrorCode.InvalidOptions,
			`step name ${JSON.stringify(name)} has an unpaired UTF-16 surrogate (a string cut inside an emoji?), which storage cannot keep as is; use well-formed text`,
		);
	}
}
