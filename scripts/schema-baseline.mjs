// Writes drizzle/baseline.sql: the schema that drizzle/0000..N leave behind, as plain CREATE
// statements (no ALTERs), for objects created from scratch. Every workflow instance is a new
// object, and replaying the migration chain re-parses the whole schema after each ALTER;
// creating the final tables directly costs a new object about 2 ms less CPU (docs/decisions.md
// "Statements are the unit of cost"). The statements are read back from SQLite after applying
// the chain, so the baseline is the chain's result by construction; test/runtime/
// migrate-in-one-call.test.ts checks it in workerd and fails when this file is stale.
//
// Run by `npm run db:generate` after drizzle-kit; `npm run db:baseline` alone after a custom migration.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';

const dir = join(import.meta.dirname, '..', 'drizzle');
const journal = JSON.parse(readFileSync(join(dir, 'meta', '_journal.json'), 'utf8'));
const db = new DatabaseSync(':memory:');
for (const entry of journal.entries) {
	const file = readFileSync(join(dir, `${entry.tag}.sql`), 'utf8');
	for (const statement of file.split('--> statement-breakpoint')) if (statement.replace(/--[^\n]*/g, '').trim()) db.exec(statement);
}
const objects = db.prepare(`SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY rowid`).all();
const last = journal.entries.at(-1);
const header = [
	`-- The schema drizzle/0000..${last.tag} leave behind, as one script for new objects (scripts/schema-baseline.mjs).`,
	'-- Generated: do not edit. `npm run db:baseline` rewrites it; the line below says which migrations it stands for.',
	`-- up-to: ${last.when}`,
];
writeFileSync(join(dir, 'baseline.sql'), `${header.join('\n')}\n${objects.map((o) => `${o.sql};`).join('\n--> statement-breakpoint\n')}\n`);
console.log(`drizzle/baseline.sql: ${objects.length} schema objects, up to ${last.tag}`);
