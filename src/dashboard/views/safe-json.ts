/** JSON that is safe inside a `<script>` element (every page's config block). */
export function safeJson(value: unknown): string {
	return JSON.stringify(value).replace(/</g, '\\u003c');
}
