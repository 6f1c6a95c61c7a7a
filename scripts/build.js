#!/usr/bin/env node
// npm run build (and npm's prepare, so that `npm ci` in a clone leaves a runnable payd):
//   1. tsc -p tsconfig.build.json: src/ to dist/ as JavaScript;
//   2. the server bundled by esbuild into dist/server/ (scripts/bundle-server.js), which
//      `payd start` runs;
//   3. the browser scripts (the widget and its card frame) bundled once by esbuild into
//      dist/checkout/widget.bundle.js and dist/checkout/card-frame.bundle.js, each with its
//      brotli (.br) and gzip (.gz) forms beside it, which the server sends as they are;
//   4. the embedded database's template (initdb and every migration, dumped) into
//      dist/pglite-template.tar.gz, from which a new embedded database starts.
// Needs the devDependencies (typescript, esbuild). Without them (npm ci --omit=dev in a
// clone) it says so and leaves dist/ as it is: install from the published package, which
// carries dist/, or build where the devDependencies are.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
process.chdir(root);
const require = createRequire(import.meta.url);
const started = Date.now();
const step = (what) => console.log(`build: ${what} (${((Date.now() - started) / 1000).toFixed(1)} s)`);

let tsc;
try {
  tsc = require.resolve('typescript/bin/tsc');
  require.resolve('esbuild');
} catch {
  console.warn('build: skipped, the devDependencies (typescript, esbuild) are not installed; `npm install` then `npm run build`');
  process.exit(0);
}

rmSync('dist', { recursive: true, force: true });
const compiled = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
if (compiled.status !== 0) {
  rmSync('dist', { recursive: true, force: true });
  console.error('build: tsc failed');
  process.exit(1);
}
step('compiled src/ to dist/');

const { bundleServer } = await import(pathToFileURL(path.join(root, 'scripts/bundle-server.js')).href);
await bundleServer('dist/server');
step('bundled the server into dist/server/');

const { bundleWidget, BROWSER_SCRIPTS, prebuiltPath, prebuiltCompressedPath, entryPath, compressBrotli, compressGzip } =
  await import(pathToFileURL(path.join(root, 'dist/checkout/widget-bundle.js')).href);
for (const name of BROWSER_SCRIPTS) {
  mkdirSync(path.dirname(prebuiltPath(name)), { recursive: true });
  const code = await bundleWidget(entryPath(name));
  writeFileSync(prebuiltPath(name), code);
  writeFileSync(prebuiltCompressedPath(name, 'br'), await compressBrotli(code));
  writeFileSync(prebuiltCompressedPath(name, 'gzip'), await compressGzip(code));
}
step('bundled the widget and its card frame (and their .br and .gz)');

const { writeTemplate } = await import(pathToFileURL(path.join(root, 'dist/platform/db/pglite-template.js')).href);
await writeTemplate();
step('wrote the embedded database template');
