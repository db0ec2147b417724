import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * No source file over 500 lines (docs/architecture.md): a file that grows past it holds more
 * than one concept, and is split by concept (as step-context.ts / step-opening.ts were), not
 * by line count.
 */
const MAX_LINES = 500;
const root = resolve(import.meta.dirname, '../..');

function sourceFiles(dir: string): string[] {
	return readdirSync(dir).flatMap((name) => {
		const path = join(dir, name);
		if (statSync(path).isDirectory()) return sourceFiles(path);
		return /\.(ts|tsx|js|mjs|css)$/.test(name) ? [path] : [];
	});
}

describe('source files stay small', () => {
	it(`no file in src/ is over ${MAX_LINES} lines`, () => {
		const long = sourceFiles(join(root, 'src'))
			.map((file) => ({ file: relative(root, file), lines: readFileSync(file, 'utf8').split('\n').length - 1 }))
			.filter(({ lines }) => lines > MAX_LINES)
			.map(({ file, lines }) => `${file}: ${lines} lines`);
		expect(long).toEqual([]);
	});
});
