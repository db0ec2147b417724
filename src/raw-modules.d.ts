// The dashboard's browser files, imported as text with `?raw` (src/dashboard/assets.ts): wrangler's
// Text rule for `**/*?raw` (wrangler.jsonc), Vite's own `?raw` in the tests, and scripts/build.mjs for the package.
declare module '*?raw' {
	const text: string;
	export default text;
}
