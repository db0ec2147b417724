import { ErrorCode, ValidationError } from './errors';

/** The units a duration string may end with (`'2s'`, `'1 second'`, `'24 hours'`, `'7d'`). */
export type DurationUnit = keyof typeof UNIT_MS;

/**
 * A length of time: milliseconds, or a number and a unit with or without a
 * space (`'2s'`, `'500 ms'`, `'1 second'`, `'7 days'`). A misspelt unit does
 * not compile (`'3 sec0nds'`). In a class property such as `static defaults`,
 * which TypeScript does not type from the base class, write
 * `satisfies WorkflowDefaults` after the object so its strings keep their
 * literal types (see docs/writing-workflows.md, "The step API").
 */
export type Duration = number | `${number}${DurationUnit}` | `${number} ${DurationUnit}`;

const UNIT_MS = {
	ms: 1, millisecond: 1, milliseconds: 1,
	s: 1000, sec: 1000, secs: 1000, second: 1000, seconds: 1000,
	m: 60_000, min: 60_000, mins: 60_000, minute: 60_000, minutes: 60_000,
	h: 3_600_000, hr: 3_600_000, hrs: 3_600_000, hour: 3_600_000, hours: 3_600_000,
	d: 86_400_000, day: 86_400_000, days: 86_400_000,
	w: 604_800_000, week: 604_800_000, weeks: 604_800_000,
	y: 31_536_000_000, year: 31_536_000_000, years: 31_536_000_000,
} satisfies Record<string, number>;

const PATTERN = /^\s*(\d+(?:\.\d+)?)\s*([a-z]+)\s*$/i;

/** Longest duration accepted: 365 days, so a typo cannot park a workflow forever. */
export const MAX_DURATION_MS = 365 * 86_400_000;

/**
 * Parses a duration into milliseconds, or throws `INVALID_DURATION` saying what
 * is accepted. Takes any value: durations also arrive untyped (JSON, another
 * Worker's RPC), and the units are matched case-insensitively at run time.
 */
export function parseDuration(value: Duration | (string & {}) | unknown): number {
	let ms: number | undefined;
	if (typeof value === 'number') {
		ms = Number.isFinite(value) && value >= 0 ? value : undefined;
	} else if (typeof value === 'string') {
		const match = PATTERN.exec(value);
		const unit = match ? (UNIT_MS as Record<string, number>)[match[2]!.toLowerCase()] : undefined;
		if (match && unit !== undefined) ms = Number(match[1]) * unit;
	}
	if (ms === undefined) {
		throw new ValidationError(
			ErrorCode.InvalidDuration,
			`invalid duration ${show(value)}: use milliseconds (a number >= 0) or a string like "500ms", "2s", "1 second", "24 hours", "7d", "7 days"`,
		);
	}
	if (ms > MAX_DURATION_MS) {
		throw new ValidationError(ErrorCode.InvalidDuration, `duration ${show(value)} is longer than the maximum of 365 days`);
	}
	return Math.round(ms);
}

/** A duration as the caller wrote it (JSON would print Infinity and NaN as null). */
function show(value: unknown): string {
	return typeof value === 'number' ? String(value) : JSON.stringify(value) ?? String(value);
}
