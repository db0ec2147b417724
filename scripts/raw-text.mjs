// esbuild plugin: `import text from './file.js?raw'` gives the file's text (the dashboard's browser
// scripts and stylesheet, src/dashboard/assets.ts). wrangler does the same with the Text rule for
// `**/*?raw` in wrangler.jsonc, Vite by itself in the tests.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

/** @type {import('esbuild').Plugin} */
export const rawText = {
	name: 'raw-text',
	setup(build) {
		build.onResolve({ filter: /\?raw$/ }, (args) => ({ path: resolve(args.resolveDir, args.path.slice(0, -'?raw'.length)), namespace: 'raw-text' }));
		build.onLoad({ filter: /.*/, namespace: 'raw-text' }, (args) => ({ contents: readFileSync(args.path, 'utf8'), loader: 'text', watchFiles: [args.path] }));
	},
};
