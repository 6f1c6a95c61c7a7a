#!/usr/bin/env node
// npm test: runs every test/**/*.test.ts (and .test.tsx) with node's test runner, TypeScript
// loaded by scripts/test-loader.js (esbuild, cached: half the start-up CPU of tsx a file).
// Test files run in parallel processes; each makes its own database.
// On PostgreSQL the test databases are copies of one migrated template, dropped at the end.
// Usage: npm test [-- <file or folder filter>...]
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

function walk(dir) {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    return statSync(p).isDirectory() ? walk(p) : /\.test\.tsx?$/.test(p) ? [p] : [];
  });
}

const filters = process.argv.slice(2);
const files = walk('test').filter((f) => filters.length === 0 || filters.some((x) => f.includes(x))).sort();
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}
const concurrency = Number(process.env.TEST_CONCURRENCY) || Math.max(2, os.availableParallelism());
// PGlite's WebAssembly compiled by V8's baseline compiler only (Liftoff), not tiered up to
// TurboFan: a test file's process lives for seconds, and the optimizing compiler's work on
// PostgreSQL's startup code does not pay back in that time (0.3 s of CPU a database; a
// sixth less CPU for the suite). The test runner passes the flag to each file's process;
// a Node whose V8 no longer knows it runs without it.
const liftoffOnly = spawnSync(process.execPath, ['--liftoff-only', '-e', '0']).status === 0 ? ['--liftoff-only'] : [];
const result = spawnSync(
  process.execPath,
  [...liftoffOnly, '--import', fileURLToPath(new URL('./test-loader.js', import.meta.url)), '--test', `--test-concurrency=${concurrency}`, '--test-timeout=300000', ...files],
  { stdio: 'inherit', env: { ...process.env, LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent' } },
);
await dropPgTemplates();
process.exit(result.status ?? 1);

/** The migrated templates the test databases were copied from (test/helpers/db.ts), dropped with the run. */
async function dropPgTemplates() {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test', connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    const { rows } = await client.query("SELECT datname FROM pg_database WHERE datname LIKE 'payd\\_tpl%'");
    for (const { datname } of rows) await client.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`).catch(() => {});
  } catch {
    // No PostgreSQL server here: no template was made on it.
  } finally {
    await client.end().catch(() => {});
  }
}
