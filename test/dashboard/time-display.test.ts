import { describe, expect, it } from 'vitest';
import { Time } from '../../src/dashboard/views/layout';
import { Row } from '../../src/dashboard/views/list';

// Rendered on Node as the dashboard's pages render them (hono/jsx to HTML).
const html = (node: unknown) => String(node);

describe('times in the dashboard', () => {
	it('shows a time as ISO 8601 UTC with its ms for the browser script', () => {
		expect(html(Time({ ms: Date.UTC(2024, 4, 1, 10) }))).toContain('2024-05-01 10:00:00 UTC');
	});

	it.for([-8_640_000_000_000_001, 9e15, Number.NaN])("shows %d, which no Date holds (data stored before such values were refused), as it is instead of failing the page", (ms) => {
		const rendered = html(Time({ ms }));
		expect(rendered).toContain(String(ms));
		expect(rendered).toContain('data-invalid-time');
	});

	it('renders a list row whose datetime attribute is beyond Date range', () => {
		const rendered = html(Row({ item: { id: 'r17', type: 'payment', status: 'running', createdAt: 1, updatedAt: 1, attributes: { dueAt: -8640000000000001 } }, declared: { dueAt: 'datetime' } }));
		expect(rendered).toContain('-8640000000000001');
	});
});
