// drizzle/baseline.sql as text, imported the way migrations.js imports the migrations
// (wrangler's Text rule for *.sql; esbuild's text loader in scripts/build.mjs).
import baseline from './baseline.sql';

export default baseline;
