import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../..');

describe('drizzle migrations', () => {
	it('match the schema: drizzle-kit generates nothing new from the committed snapshot', () => {
		const dir = mkdtempSync(join(tmpdir(), 'shardflow-drizzle-'));
		try {
			cpSync(join(root, 'drizzle'), join(dir, 'drizzle'), { recursive: true });
			const before = readdirSync(join(dir, 'drizzle')).sort();
			writeFileSync(
				join(dir, 'drizzle.config.mjs'),
				`export default ${JSON.stringify({ out: './drizzle', schema: relative(dir, join(root, 'src/db/schema.ts')), dialect: 'sqlite', driver: 'durable-sqlite' })};`,
			);
			const output = execFileSync(join(root, 'node_modules/.bin/drizzle-kit'), ['generate', '--config', join(dir, 'drizzle.config.mjs')], {
				cwd: dir,
				encoding: 'utf8',
			});
			expect(readdirSync(join(dir, 'drizzle')).sort(), output).toEqual(before);
			expect(output).toMatch(/No schema changes/);
		} finally {
			rmSync(dir, { recursive: true, force: true });
		}
	}, 60_000);
});
