import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The README and the docs/ pages as a reader follows them: every relative link
 * and image points at a file that exists, every `#anchor` at a heading of its
 * page, and docs/README.md (the table of contents) links every page.
 */
const root = resolve(import.meta.dirname, '../..');
const PAGES = ['README.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** Lines outside code fences, with inline code blanked out. */
function prose(text: string): string[] {
	let fence = false;
	return text.split('\n').map((line) => {
		if (/^\s*```/.test(line)) {
			fence = !fence;
			return '';
		}
		return fence ? '' : line.replace(/`[^`]*`/g, '``');
	});
}

/** GitHub's heading anchors: lower case, punctuation other than `-` and `_` dropped, spaces to `-`, repeats numbered. */
function anchors(text: string): Set<string> {
	const seen = new Map<string, number>();
	const out = new Set<string>();
	let fence = false;
	for (const line of text.split('\n')) {
		if (/^\s*```/.test(line)) fence = !fence;
		const heading = fence ? null : /^#{1,6} (.*)$/.exec(line);
		if (!heading) continue;
		const base = heading[1]!.trim().toLowerCase().replace(/[^\p{L}\p{N}_\- ]/gu, '').replace(/ /g, '-');
		const n = seen.get(base) ?? 0;
		seen.set(base, n + 1);
		out.add(n ? `${base}-${n}` : base);
	}
	return out;
}

function links(page: string): { line: number; target: string }[] {
	return prose(readFileSync(join(root, page), 'utf8')).flatMap((line, i) =>
		[...line.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => ({ line: i + 1, target: m[1]! })).filter(({ target }) => !/^[a-z][a-z+.-]*:/i.test(target)),
	);
}

describe('README and docs/ links', () => {
	it('point at files that exist, and at headings that exist', () => {
		const broken: string[] = [];
		for (const page of PAGES) {
			for (const { line, target } of links(page)) {
				const [path, anchor] = target.split('#') as [string, string | undefined];
				const file = path ? join(dirname(join(root, page)), decodeURIComponent(path)) : join(root, page);
				if (!existsSync(file)) broken.push(`${page}:${line} ${target}: no file ${relative(root, file)}`);
				else if (anchor && file.endsWith('.md') && !anchors(readFileSync(file, 'utf8')).has(anchor)) broken.push(`${page}:${line} ${target}: no heading #${anchor}`);
			}
		}
		expect(broken).toEqual([]);
	});

	it('docs/README.md links every docs page', () => {
		const index = join(root, 'docs/README.md');
		expect(existsSync(index), 'docs/README.md, the table of contents').toBe(true);
		const linked = new Set(links('docs/README.md').map(({ target }) => target.split('#')[0]));
		const pages = readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md') && f !== 'README.md');
		expect(pages.filter((page) => !linked.has(page))).toEqual([]);
	});
});
