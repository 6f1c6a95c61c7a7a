#!/usr/bin/env node
// The payd command. It is the server process itself (no child process), so that a
// supervisor's SIGTERM reaches payd directly (see docs/operations.md, Production command).
// It runs the compiled JavaScript in dist/ (npm run build). In a clone whose sources are
// newer than dist/, or that has no dist/ yet, it runs the TypeScript sources through tsx
// (a devDependency) instead, so that an edit takes effect without a rebuild.
// PAYD_FROM_SOURCES=1 always runs the sources; PAYD_FROM_SOURCES=0 never does (it exits
// with an error instead: the benches set it, so that they never time the slower start and
// larger memory of the sources run through tsx for what users run).
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';

const [first] = process.argv.slice(2);
const root = new URL('../', import.meta.url);

/** The newest modification time under src/ (a few hundred files: about a millisecond). */
function newestSource(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = new URL(entry.name + (entry.isDirectory() ? '/' : ''), dir);
    newest = Math.max(newest, entry.isDirectory() ? newestSource(p) : statSync(p).mtimeMs);
  }
  return newest;
}

function compiledIsCurrent() {
  const main = new URL('dist/server/payd.js', root);
  if (!existsSync(main)) return false;
  const src = new URL('src/', root);
  // An installed package has no src/: dist/ is all there is.
  return !existsSync(src) || newestSource(src) <= statSync(main).mtimeMs;
}

if (first === '--version' || first === '-v' || first === 'version') {
  // Answered before the server's modules load.
  const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8'));
  console.log(pkg.version);
} else if (process.env.PAYD_FROM_SOURCES !== '1' && compiledIsCurrent()) {
  // Node 22.1 and later keep the compiled code of the modules between starts (in the
  // system's temporary directory); Node 20 has no such cache and starts without it.
  (await import('node:module')).enableCompileCache?.();
  await import('../dist/server/payd.js');
} else if (process.env.PAYD_FROM_SOURCES === '0') {
  console.error('payd: dist/ is missing or older than src/ and PAYD_FROM_SOURCES=0: run `npm run build`');
  process.exit(2);
} else {
  let register;
  try {
    ({ register } = await import('tsx/esm/api'));
  } catch {
    console.error('payd: dist/ is missing or older than src/, and tsx (a devDependency) is not installed to run the sources: run `npm run build`');
    process.exit(2);
  }
  register();
  await import('../src/main.ts');
}
