import { describe, expect, it, vi } from 'vitest';
import { storageSettingsOf, type StorageSettings } from '../../src/runtime/storage-format';

const level1: StorageSettings = { layout: 'table', outboxInRow: false, compactFormat: 1, inlineOneRow: false, foldSleeps: false };
const level2: StorageSettings = { ...level1, outboxInRow: true };
const level3: StorageSettings = { ...level2, layout: 'compact' };
const level4: StorageSettings = { ...level3, compactFormat: 2, inlineOneRow: true };
const level5: StorageSettings = { ...level4, foldSleeps: true };

describe('one setting for the storage format (SHARDFLOW_STORAGE_FORMAT)', () => {
	it.each<[string, Record<string, unknown>, StorageSettings]>([
		// The levels: each the newest format a deployment may write, unset the one every build reads.
		['unset: what 0.1.0 and every build read', {}, level1],
		['level 1', { SHARDFLOW_STORAGE_FORMAT: '1' }, level1],
		['level 2: the outbox in the instance row', { SHARDFLOW_STORAGE_FORMAT: '2' }, level2],
		['level 3: the compact layout, format 1', { SHARDFLOW_STORAGE_FORMAT: '3' }, level3],
		['level 4: compact format 2, an inline child in one row (a new project)', { SHARDFLOW_STORAGE_FORMAT: '4' }, level4],
		['level 4 as a number', { SHARDFLOW_STORAGE_FORMAT: 4 }, level4],
		['level 5: sleeps folded into the writes around them (a new project)', { SHARDFLOW_STORAGE_FORMAT: '5' }, level5],
		// No old switch names the fold: each keeps its meaning for its own part at level 5.
		['level 5 with the table layout kept', { SHARDFLOW_STORAGE_FORMAT: '5', SHARDFLOW_STORAGE_LAYOUT: 'table' }, { ...level5, layout: 'table' }],
		// The fold is built on format 2 (a sleep's wake-up in its step, a woken pass's running held): format 1 kept holds it back.
		['level 5 with format 1 kept', { SHARDFLOW_STORAGE_FORMAT: '5', SHARDFLOW_COMPACT_FORMAT: '1' }, { ...level5, compactFormat: 1, foldSleeps: false }],
		// A deployment from a previous build keeps the switches its wrangler.jsonc sets: as before the level existed.
		['the previous starter (three switches, no level)', { SHARDFLOW_STORAGE_LAYOUT: 'compact', SHARDFLOW_INLINE_ONE_ROW: 'true', SHARDFLOW_COMPACT_FORMAT: '2' }, { ...level4, outboxInRow: false }],
		['the layout switch alone', { SHARDFLOW_STORAGE_LAYOUT: 'compact' }, { ...level1, layout: 'compact' }],
		['the outbox switch alone', { SHARDFLOW_OUTBOX_IN_ROW: 'true' }, level2],
		// An explicit old switch wins over the level for its own part, either way.
		['level 4 with the table layout kept', { SHARDFLOW_STORAGE_FORMAT: '4', SHARDFLOW_STORAGE_LAYOUT: 'table' }, { ...level4, layout: 'table' }],
		['level 4 with format 1 kept', { SHARDFLOW_STORAGE_FORMAT: '4', SHARDFLOW_COMPACT_FORMAT: '1' }, { ...level4, compactFormat: 1 }],
		['level 4 with the one-row child off', { SHARDFLOW_STORAGE_FORMAT: '4', SHARDFLOW_INLINE_ONE_ROW: 'false' }, { ...level4, inlineOneRow: false }],
		['level 3 with the outbox off', { SHARDFLOW_STORAGE_FORMAT: '3', SHARDFLOW_OUTBOX_IN_ROW: 'false' }, { ...level3, outboxInRow: false }],
		['level 1 with format 2 asked', { SHARDFLOW_STORAGE_FORMAT: '1', SHARDFLOW_STORAGE_LAYOUT: 'compact', SHARDFLOW_COMPACT_FORMAT: '2' }, { ...level1, layout: 'compact', compactFormat: 2 }],
		// An empty switch is unset (a var cleared in the dashboard), so the level decides.
		['level 4 with empty switches', { SHARDFLOW_STORAGE_FORMAT: '4', SHARDFLOW_STORAGE_LAYOUT: '', SHARDFLOW_OUTBOX_IN_ROW: '', SHARDFLOW_COMPACT_FORMAT: '', SHARDFLOW_INLINE_ONE_ROW: '' }, level4],
	])('%s', (_, vars, settings) => {
		expect(storageSettingsOf(vars)).toEqual(settings);
	});

	it.each(['6', '0', 'compact', 'true', '4.0', ' '])('logs a malformed level (%j) as config.invalid and writes level 1', (value) => {
		const errors = vi.spyOn(console, 'error').mockImplementation(() => {});
		try {
			expect(storageSettingsOf({ SHARDFLOW_STORAGE_FORMAT: value })).toEqual(level1);
			expect(errors).toHaveBeenCalledWith(expect.objectContaining({ level: 'error', event: 'config.invalid', setting: 'SHARDFLOW_STORAGE_FORMAT', msg: expect.stringContaining('SHARDFLOW_STORAGE_FORMAT must be') }));
		} finally {
			errors.mockRestore();
		}
	});

	it('a valid level logs nothing', () => {
		const errors = vi.spyOn(console, 'error').mockImplementation(() => {});
		try {
			for (const value of ['1', '2', '3', '4', '5']) storageSettingsOf({ SHARDFLOW_STORAGE_FORMAT: value });
			expect(errors).not.toHaveBeenCalled();
		} finally {
			errors.mockRestore();
		}
	});

	it('reports a malformed level once per isolate, as one JSON line under development, however often it is read', () => {
		const errors = vi.spyOn(console, 'error').mockImplementation(() => {});
		try {
			const env = { SHARDFLOW_ENV: 'development', SHARDFLOW_STORAGE_FORMAT: 'five' };
			// Every create reads the settings: a bad value must not become a line per create.
			for (let i = 0; i < 5; i++) expect(storageSettingsOf(env)).toEqual(level1);
			expect(errors).toHaveBeenCalledTimes(1);
			const [line] = errors.mock.calls[0]!;
			expect(typeof line).toBe('string');
			expect(JSON.parse(line as string)).toMatchObject({ source: 'shardflow', event: 'config.invalid', setting: 'SHARDFLOW_STORAGE_FORMAT' });
		} finally {
			errors.mockRestore();
		}
	});
});
