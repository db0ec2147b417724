import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The engine's folders in their order, ground first (docs/architecture.md
 * "The engine's folders, in order" draws it): a file may import its own
 * folder and any folder on an earlier line, never one on its own line or a
 * later one. Type-only imports count as much as value imports: they are how a
 * reader finds the ground, and a type circle is a circle of meaning.
 *
 * A new folder must be placed here before anything imports it.
 */
export const ENGINE_ORDER: readonly (readonly string[])[] = [
	// ids, durations, errors, JSON, limits, statuses and step kinds: the words every folder shares
	['support'],
	// the history record format (a versioned contract: docs/history-format.md); residency groups;
	// the Durable Object names (object-names.ts builds and parses every one)
	['history', 'groups', 'object-names.ts'],
	// the index entry, its queries, search attributes, shards, cursors
	['index'],
	// the store rows and the InstanceStore port, the in-memory store
	['storage'],
	// what a workflow declares: its types, options, retry policy, limits, the registry
	['definition'],
	['webhooks', 'streams'],
	['children'],
	// a pass's step context, replay journal, rollbacks
	['steps'],
	// what the API shows of an instance: status, step and history pages
	['views'],
	['lifecycle', 'limiter', 'schedule', 'bulk'],
	// the instance kernel and its parts: the top, which may use everything above
	['instance'],
];

const root = resolve(import.meta.dirname, '../..');
const src = join(root, 'src');
const engine = join(src, 'engine');

function sourceFiles(dir: string): string[] {
	return readdirSync(dir).flatMap((name) => {
		const path = join(dir, name);
		if (statSync(path).isDirectory()) return sourceFiles(path);
		return /\.(ts|tsx)$/.test(name) && !name.endsWith('.d.ts') ? [path] : [];
	});
}

/** Every module a file names: static imports and re-exports (type-only ones too) and dynamic `import()`. */
function importsOf(file: string): string[] {
	return ts.preProcessFile(readFileSync(file, 'utf8'), true, true).importedFiles.map((f) => f.fileName);
}

/** The source file a relative specifier names (`./x`, `./x.js`, `./dir` with an index), or undefined for a package. */
function resolveImport(from: string, spec: string): string | undefined {
	if (!spec.startsWith('.')) return undefined;
	const base = resolve(dirname(from), spec.replace(/\.js$/, ''));
	for (const candidate of [base, `${base}.ts`, `${base}.tsx`, join(base, 'index.ts')]) {
		if (existsSync(candidate) && statSync(candidate).isFile()) return candidate;
	}
	return base;
}

/** The engine folder (or root file) a file belongs to: `steps` for src/engine/steps/x.ts, `object-names.ts` for src/engine/object-names.ts. */
function engineUnit(file: string): string {
	return relative(engine, file).split(sep)[0]!;
}

const rankOf = new Map(ENGINE_ORDER.flatMap((units, rank) => units.map((unit) => [unit, rank] as const)));

interface Arrow {
	file: string;
	imports: string;
	why: string;
}

function engineBackArrows(): Arrow[] {
	const arrows: Arrow[] = [];
	for (const file of sourceFiles(engine)) {
		const from = engineUnit(file);
		for (const spec of importsOf(file)) {
			const target = resolveImport(file, spec);
			if (!target?.startsWith(engine + sep)) continue;
			const to = engineUnit(target);
			if (to === from) continue;
			const fromRank = rankOf.get(from);
			const toRank = rankOf.get(to);
			const name = relative(root, file);
			if (fromRank === undefined) arrows.push({ file: name, imports: spec, why: `${from} is not in ENGINE_ORDER` });
			else if (toRank === undefined) arrows.push({ file: name, imports: spec, why: `${to} is not in ENGINE_ORDER` });
			else if (toRank >= fromRank) arrows.push({ file: name, imports: spec, why: toRank === fromRank ? `${from} and ${to} are siblings` : `${to} comes after ${from}` });
		}
	}
	return arrows;
}

const describeArrow = (a: Arrow) => `${a.file} imports '${a.imports}' (${a.why})`;

describe('the engine folders import in one direction', () => {
	it('every engine folder is placed in the order', () => {
		const units = readdirSync(engine).filter((name) => statSync(join(engine, name)).isDirectory() || /\.tsx?$/.test(name));
		expect(units.filter((unit) => !rankOf.has(unit))).toEqual([]);
		expect([...rankOf.keys()].filter((unit) => !units.includes(unit))).toEqual([]);
	});

	it('no file imports a folder on its own line or a later one of ENGINE_ORDER', () => {
		expect(engineBackArrows().map(describeArrow)).toEqual([]);
	});

	it('the client does not import the authoring module (workflow.ts imports the client)', () => {
		const authoring = [join(src, 'workflow.ts'), join(src, 'authoring.ts')];
		const arrows = sourceFiles(join(src, 'client')).flatMap((file) =>
			importsOf(file)
				.filter((spec) => authoring.includes(resolveImport(file, spec) ?? ''))
				.map((spec) => `${relative(root, file)} imports '${spec}'`),
		);
		expect(arrows).toEqual([]);
	});

	it('the engine core imports nothing outside src/engine', () => {
		const arrows = sourceFiles(engine).flatMap((file) =>
			importsOf(file)
				.filter((spec) => {
					const target = resolveImport(file, spec);
					return target !== undefined && !target.startsWith(engine + sep);
				})
				.map((spec) => `${relative(root, file)} imports '${spec}'`),
		);
		expect(arrows).toEqual([]);
	});
});
