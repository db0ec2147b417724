import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../..');
const folder = join(root, 'src/dashboard/public/dashboard');

// The dashboard serves its browser files from the bundle (src/dashboard/assets.ts), by an explicit list:
// a new module or stylesheet that is not on it would answer 404 in the browser.
it('bundles every file of the dashboard\'s public folder, and serves each under its own name', () => {
	const source = readFileSync(join(root, 'src/dashboard/assets.ts'), 'utf8');
	const imported = [...source.matchAll(/from '\.\/public\/dashboard\/([^']+)\?raw'/g)].map((m) => m[1]);
	const served = [...source.matchAll(/^\t'([^']+)': \{ body: /gm)].map((m) => m[1]);
	const files = readdirSync(folder).sort();
	expect(imported.sort()).toEqual(files);
	expect(served.sort()).toEqual(files);
});

// The route that serves them matches a file name by a pattern (src/dashboard/dashboard.tsx, `/:file{...}`): a file whose
// name it does not match (a dash, say) is bundled and listed, yet answers 404, and every module importing it fails to load.
it('names every file of the public folder so that the route serving them matches it', () => {
	const source = readFileSync(join(root, 'src/dashboard/dashboard.tsx'), 'utf8');
	const pattern = /'\/:file\{(.+?)\}'/.exec(source)?.[1];
	expect(pattern, 'the route of the dashboard files').toBeDefined();
	const route = new RegExp(`^${pattern!.replaceAll('\\\\', '\\')}$`);
	for (const file of readdirSync(folder)) expect(route.test(file), `${file} against ${route}`).toBe(true);
});
