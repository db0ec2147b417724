// wrangler bundles the drizzle-kit migrations (`*.sql`) as text (see the Text rule in wrangler.jsonc).
declare module '*.sql' {
	const text: string;
	export default text;
}
