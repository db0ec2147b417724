// `npm pack` / `npm publish`: the package.json that goes into the tarball has no `scripts`.
// They are this repository's (dev, test, build, and `prepare`, which builds a git install,
// scripts/prepare.mjs): none of their files is shipped, and a `prepare` in an installed
// package makes npm warn that it is not covered by allowScripts. `prepack` runs
// `strip` after the build (the manifest is read from disk when the tarball is made),
// `postpack` runs `restore`; a copy left by a pack that failed in between is restored
// by the next run of either.
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const manifest = join(root, 'package.json');
const saved = join(root, '.package.json.unpacked');

function restore() {
	if (existsSync(saved)) renameSync(saved, manifest);
}

const mode = process.argv[2];
if (mode === 'strip') {
	restore();
	const text = readFileSync(manifest, 'utf8');
	writeFileSync(saved, text);
	const { scripts: _scripts, ...published } = JSON.parse(text);
	writeFileSync(manifest, `${JSON.stringify(published, null, '\t')}\n`);
} else if (mode === 'restore') {
	restore();
} else {
	console.error('usage: node scripts/pack-manifest.mjs strip|restore');
	process.exit(2);
}
