import { cloudflareTest } from '@cloudflare/vitest-plugin';
import { defineConfig } from 'vitest/config';

// Two projects: the workflows on plain Node with the test kit (fast, a virtual clock),
// and the Worker inside workerd, the runtime it deploys to.
export default defineConfig({
	test: {
		projects: [
			{ test: { name: 'node', include: ['test/**/*.test.ts'], exclude: ['test/**/*.workerd.test.ts'], environment: 'node' } },
			{
				plugins: [
					cloudflareTest({
						main: './test/worker.ts',
						wrangler: { configPath: './wrangler.jsonc' },
						miniflare: { bindings: { SHARDFLOW_ENV: 'development', SHARDFLOW_LOG: 'off' } },
					}),
				],
				test: { name: 'workers', include: ['test/**/*.workerd.test.ts'] },
			},
		],
	},
});
