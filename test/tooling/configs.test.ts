import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../..');
/** wrangler's JSONC: line comments out (no config value here contains "//"), then JSON. */
const read = (file: string) => JSON.parse(readFileSync(join(root, file), 'utf8').replace(/^\s*\/\/.*$/gm, '').replace(/,(\s*[}\]])/g, '$1'));

describe('wrangler configurations', () => {
	it('the archive configuration is the product configuration plus the R2 bucket, nothing less', () => {
		const product = read('wrangler.jsonc');
		const { r2_buckets, ...archive } = read('wrangler.archive.jsonc');
		expect(r2_buckets).toEqual([{ binding: 'ARCHIVE', bucket_name: 'shardflow-archive' }]);
		const { $schema: _a, ...rest } = archive;
		const { $schema: _p, ...expected } = product;
		expect(rest).toEqual(expected);
	});
});
