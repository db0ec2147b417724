// The two sides an A/B script serves (bench:ab, bench:work, bench:profile): the base, a commit checked out with
// `git archive`, and the head, this tree as it is now; both under bench/.ab/ (ignored by git), inside the repository so
// that their imports resolve to this tree's node_modules.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * The base (`rev`, checked out under bench/.ab/<prefix><rev>) and the head's name (HEAD, and whether the tree has
 * uncommitted changes). `remove()` deletes what this made.
 * @param {string} root
 * @param {string} rev
 * @param {string} [prefix] a directory of its own per script, so that one script's cleanup leaves another's checkout
 */
export function baseSide(root, rev, prefix = '') {
	const git = (/** @type {string[]} */ ...args) => execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim();
	const baseRev = git('rev-parse', '--verify', `${rev}^{commit}`);
	const headRev = git('rev-parse', 'HEAD') + (git('status', '--porcelain', '--untracked-files=no') ? ' (with uncommitted changes)' : '');
	const baseDir = join(root, 'bench/.ab', `${prefix}${baseRev.slice(0, 12)}`);
	if (!existsSync(join(baseDir, 'package.json'))) {
		mkdirSync(baseDir, { recursive: true });
		execFileSync('sh', ['-c', `git archive ${baseRev} | tar -x -C "${baseDir}"`], { cwd: root });
	}
	return { baseRev, headRev, baseDir, remove: () => rmSync(baseDir, { recursive: true, force: true }) };
}

/**
 * The head served from a copy (bench/.ab/<name>), as the base is: this tree's files as they are now (tracked ones, with
 * their uncommitted changes, and new ones git does not ignore). Served from the repository itself, an A/A of one build
 * gave the head 0.80x on create p50 and 0.77x on p95 (bench/results/ab-create-aa-format5.md): the sides must differ in
 * nothing but the code.
 * @param {string} root
 * @param {string} name
 */
export function headCopy(root, name) {
	const dir = join(root, 'bench/.ab', name);
	rmSync(dir, { recursive: true, force: true });
	mkdirSync(dir, { recursive: true });
	execFileSync('sh', ['-c', `git ls-files -z --cached --others --exclude-standard | tar --null --ignore-failed-read -T - -cf - | tar -x -C "${dir}"`], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
	return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Prints an A/B script's table and writes it to `out` when given.
 * @param {string} table
 * @param {string | undefined} out
 */
export function reportTable(table, out) {
	console.log(table);
	if (out) writeFileSync(resolve(out), table);
}

/**
 * Stops both sides' servers, then removes what the script checked out or copied.
 * @param {{ head: { stop(): Promise<unknown> }, base: { stop(): Promise<unknown> } }} servers
 * @param {...(() => void)} removals
 */
export async function stopSides(servers, ...removals) {
	await Promise.all([servers.head.stop(), servers.base.stop()]);
	for (const remove of removals) remove();
}
