// `npm install` of shardflow from git (`npm install github:owner/shardflow`, `git+file:...`)
// clones it, installs its dev dependencies and runs `prepare`, never `prepack`: without this
// the installed package would have no dist/ and import nothing. So `prepare` builds, but only
// when npm prepares the package for another project (INIT_CWD, where npm was started, is not
// this directory); this repository's own `npm install`/`npm ci` skip it, and `npm pack`
// builds through `prepack`.
import { resolve } from 'node:path';

const startedIn = process.env.INIT_CWD;
if (startedIn && resolve(startedIn) !== resolve(import.meta.dirname, '..')) {
	await import('./build.mjs');
}
