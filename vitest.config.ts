import { cloudflareTest } from '@cloudflare/vitest-plugin';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// Two projects: the pure engine core on plain Node (no workerd), and
// everything that needs the runtime inside workerd through the Workers
// vitest integration.
export default defineConfig({
	test: {
		// Two test files at a time even on 2 cores (vitest's default is cores - 1, one file at a time):
		// most files wait on wrangler dev, workerd or Chromium rather than compute.
		maxWorkers: 2,
		projects: [
			{
				test: {
					name: 'node',
					include: ['test/engine/**/*.test.ts', 'test/client/**/*.test.ts', 'test/tooling/**/*.test.ts', 'test/dashboard/**/*.test.ts', 'test/testing/*.test.ts', 'test/examples/*.node.test.ts'],
					exclude: ['test/tooling/package.test.ts'],
					environment: 'node',
				},
			},
			{
				// The package test runs alone, after every other file: `npm pack` rewrites this repository's
				// package.json (prepack/postpack), and every wrangler dev serving the repository meanwhile
				// rebuilds on that change and answers "Your worker restarted mid-request".
				test: { name: 'package', include: ['test/tooling/package.test.ts'], environment: 'node', sequence: { groupOrder: 1 } },
			},
			{
				plugins: [
					cloudflareTest({
						main: './test/worker/index.ts',
						wrangler: { configPath: './wrangler.jsonc' },
						// The test Worker binds an archive bucket (local R2); the product config does not need one.
						// KV_RUNNER: the runner declared without SQLite storage, as a misconfigured deployment would (test/runtime/misconfiguration.test.ts).
						miniflare: {
							// The tests run as a new project does: wrangler.jsonc's SHARDFLOW_STORAGE_FORMAT=5 (runtime/storage-format.ts).
							// SHARDFLOW_STORAGE_FORMAT=1 (2, 3, 4) npx vitest ...: the same tests as a deployment at that level writes.
							bindings: { SHARDFLOW_ENV: 'development', SHARDFLOW_LOG: 'off', ...(process.env.SHARDFLOW_STORAGE_FORMAT ? { SHARDFLOW_STORAGE_FORMAT: process.env.SHARDFLOW_STORAGE_FORMAT } : {}),
								// Each old switch still wins for its own part, as in a deployment that set it:
								// SHARDFLOW_OUTBOX_IN_ROW=false npx vitest ...: the same tests with the outbox table (docs/decisions.md).
								...(process.env.SHARDFLOW_OUTBOX_IN_ROW ? { SHARDFLOW_OUTBOX_IN_ROW: process.env.SHARDFLOW_OUTBOX_IN_ROW } : {}),
								// SHARDFLOW_STORAGE_LAYOUT=compact (or table) npx vitest ...: the same tests with new instances in that layout (docs/decisions.md "The compact instance layout").
								...(process.env.SHARDFLOW_STORAGE_LAYOUT ? { SHARDFLOW_STORAGE_LAYOUT: process.env.SHARDFLOW_STORAGE_LAYOUT } : {}),
								// SHARDFLOW_INLINE_ONE_ROW=false npx vitest ...: the same tests with a finished inline child's steps in rows of their own.
								...(process.env.SHARDFLOW_INLINE_ONE_ROW ? { SHARDFLOW_INLINE_ONE_ROW: process.env.SHARDFLOW_INLINE_ONE_ROW } : {}),
							},
							r2Buckets: ['ARCHIVE'],
							durableObjects: { WORKFLOW_RUNNER: { className: 'WorkflowRunner', useSQLite: true }, KV_RUNNER: { className: 'KvWorkflowRunner', useSQLite: false } },
						},
					}),
				],
				// The package's own entries, as the examples import them (package.json `exports` points at dist/; tsconfig.json `paths` alike):
				// test/api/doc-auth-samples.test.ts runs examples/host-worker, the Worker docs/installing.md shows.
				resolve: {
					alias: [
						{ find: /^shardflow$/, replacement: fileURLToPath(new URL('./src/host.ts', import.meta.url)) },
						{ find: /^shardflow\/workflow$/, replacement: fileURLToPath(new URL('./src/authoring.ts', import.meta.url)) },
						{ find: /^shardflow\/client$/, replacement: fileURLToPath(new URL('./src/client.ts', import.meta.url)) },
					],
				},
				// css: the dashboard's stylesheet is imported as text (`?raw`, src/dashboard/assets.ts), which vitest empties unless told.
				test: { name: 'workers', css: { include: [/dashboard\.css/] }, include: ['test/runtime/**/*.test.ts', 'test/api/**/*.test.ts', 'test/reliability/**/*.test.ts', 'test/testing/workerd/*.test.ts', 'test/examples/*.workerd.test.ts'], testTimeout: 60_000 },
			},
		],
	},
});
