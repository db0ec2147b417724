// The package ships no types: what the metrics test reads of its answer.
declare module 'parse-prometheus-text-format' {
	interface ParsedFamily {
		name: string;
		help: string;
		type: 'GAUGE' | 'COUNTER' | 'UNTYPED' | 'SUMMARY' | 'HISTOGRAM';
		metrics: { labels?: Record<string, string>; value: string }[];
	}
	export default function parsePrometheusTextFormat(text: string): ParsedFamily[];
}
