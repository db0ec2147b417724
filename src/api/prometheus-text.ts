/**
 * The one owner of the Prometheus text exposition format (version 0.0.4, what every scraper
 * reads: Prometheus, Grafana Agent/Alloy, the OpenTelemetry Collector's prometheus receiver,
 * Datadog, VictoriaMetrics). A family is written whole, `# HELP` and `# TYPE` first, then its
 * samples; label values are escaped (`\\`, `"`, newline) and numbers written as the spec says
 * (`+Inf`, `-Inf`, `NaN`).
 */

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export type Labels = Record<string, string>;

export interface Sample {
	/** The family's name plus a suffix (`_bucket`), when not the family's own name. */
	suffix?: string;
	labels: Labels;
	value: number;
}

export interface MetricFamily {
	name: string;
	help: string;
	/** Every family shardflow serves is a gauge: its numbers are windows and current states, which can fall. */
	type: 'gauge' | 'counter' | 'untyped';
	samples: Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** The text of the families, in order; a family without samples is left out. */
export function prometheusText(families: readonly MetricFamily[]): string {
	let text = '';
	for (const family of families) {
		if (family.samples.length === 0) continue;
		if (!NAME.test(family.name)) throw new Error(`not a metric name: ${family.name}`);
		text += `# HELP ${family.name} ${escapeHelp(family.help)}\n# TYPE ${family.name} ${family.type}\n`;
		for (const sample of family.samples) text += `${family.name}${sample.suffix ?? ''}${labelsText(sample.labels)} ${numberText(sample.value)}\n`;
	}
	return text;
}

function labelsText(labels: Labels): string {
	const pairs = Object.entries(labels);
	if (pairs.length === 0) return '';
	return `{${pairs
		.map(([name, value]) => {
			if (!LABEL.test(name) || name.startsWith('__')) throw new Error(`not a label name: ${name}`);
			return `${name}="${value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"')}"`;
		})
		.join(',')}}`;
}

function escapeHelp(help: string): string {
	return help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

/** A sample's value: Go's float formatting for the specials, plain decimals otherwise. */
export function numberText(value: number): string {
	if (Number.isNaN(value)) return 'NaN';
	if (value === Infinity) return '+Inf';
	if (value === -Infinity) return '-Inf';
	return String(value);
}
