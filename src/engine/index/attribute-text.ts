/**
 * The text forms of attribute values, the one parser for every place that reads one from text:
 * the REST listing's `attr.<name>=` and the datetimes of a JSON query (`POST /workflows/bulk`,
 * `IndexClient.list`). Strict on purpose: a filter that reads `0x14` as 20 or `2024` as a time in
 * 1970 answers a different question than the one asked, with no error to say so.
 */

/** JSON's number syntax (RFC 8259 §6): no hex, no leading `+`, no `20.` or `.5`, no spaces. */
const JSON_NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

/**
 * Milliseconds since the epoch, written in full: 12 digits or more (from 1973-03-03T09:46:40Z on,
 * or before 1966-10-31T14:13:20Z for a negative one). A shorter all-digit value is refused because
 * it is something else as often as it is ms: `2024` a year, `20240301` an ISO 8601 basic date,
 * `1714557600` seconds since the epoch; read as ms, each is a time in 1970. A time nearer the
 * epoch than that is written as ISO 8601.
 */
const EPOCH_MS = /^-?[1-9]\d{11,}$/;

/** JavaScript's `Date` range either side of the epoch: a time beyond it has no date. */
const MAX_TIME_MS = 8.64e15;

/**
 * ISO 8601 as the web writes it: a date (`2024-05-01`, midnight UTC), or a date and a time with
 * minutes, optional seconds and up to 3 fraction digits, and a zone (`Z` or `+02:00`). A time
 * without a zone is refused: it would be read in whatever zone the runtime happens to have.
 */
const ISO_DATETIME = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?(?:(Z)|([+-])(\d{2}):(\d{2})))?$/;

/** A number in JSON syntax, finite; undefined otherwise. */
export function parseNumberText(text: string): number | undefined {
	if (!JSON_NUMBER.test(text)) return undefined;
	const n = Number(text);
	return Number.isFinite(n) ? n : undefined;
}

/** A datetime as ms since the epoch (12 digits or more, within Date's range) or ISO 8601 (above); undefined otherwise. */
export function parseDatetimeText(text: string): number | undefined {
	if (EPOCH_MS.test(text)) {
		const ms = Number(text);
		return Number.isSafeInteger(ms) && Math.abs(ms) <= MAX_TIME_MS ? ms : undefined;
	}
	const match = ISO_DATETIME.exec(text);
	if (!match) return undefined;
	const [, y, mo, d, h = '0', mi = '0', s = '0', fraction = '', , sign, offH = '0', offM = '0'] = match;
	const [year, month, day, hour, minute, second] = [y, mo, d, h, mi, s].map(Number) as [number, number, number, number, number, number];
	const lastDay = new Date(0);
	lastDay.setUTCFullYear(year, month, 0); // day 0 of the next month (setUTCFullYear, unlike Date.UTC, keeps years 0-99)
	const daysInMonth = lastDay.getUTCDate();
	if (month < 1 || month > 12 || day < 1 || day > daysInMonth || hour > 23 || minute > 59 || second > 59) return undefined;
	if (Number(offH) > 23 || Number(offM) > 59) return undefined;
	const offset = (sign === '-' ? -1 : 1) * (Number(offH) * 60 + Number(offM)) * 60_000;
	const utc = new Date(0);
	utc.setUTCFullYear(year, month - 1, day);
	utc.setUTCHours(hour, minute, second, Number(fraction.padEnd(3, '0')));
	return utc.getTime() - offset;
}

/**
 * A time condition as JSON gives it (a bulk query's `createdAfter`, a datetime attribute's bound):
 * text as above, or a number held to the same rule as its digits, so that `2024` is refused in a
 * JSON body as it is in a query string. Undefined when it is neither.
 */
export function parseTimeJson(value: unknown): number | undefined {
	if (typeof value === 'string') return parseDatetimeText(value);
	return typeof value === 'number' && Number.isSafeInteger(value) ? parseDatetimeText(String(value)) : undefined;
}

/** What a datetime's text must be, for error messages. */
export const DATETIME_TEXT = 'milliseconds since the epoch (12 digits or more: 2024 is a year, 20240301 a date) or an ISO 8601 date (2024-05-01, 2024-05-01T12:00:00Z)';
