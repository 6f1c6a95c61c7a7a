// How a test process loads payd's TypeScript: `node --import ./scripts/test-loader.js`
// (scripts/run-tests.js passes it to every test file's process).
//
// Why not tsx, which the rest of the repository uses: in Node 20 module hooks run on a
// thread of their own, and every module of a process makes a round trip to it. A test
// process loads about 1 100 modules (payd's ~300, TypeBox's ~680, the rest of its
// dependencies), and importing the app cost ~4.4 s of CPU under tsx against ~1.9 s plain.
// These hooks do two things only (scripts/test-loader-hooks.js):
// - TypeScript files are compiled by esbuild (types stripped, JSX for Preact, as tsx and
//   tsconfig.json do), each kept on disk by its content so that a process compiles only
//   what changed;
// - `typebox` and its subpaths load from one esbuild bundle of the package (a few chunks,
//   one copy of its code, as in the bundled server `payd start` runs: scripts/bundle-server.js)
//   instead of its ~680 files.
// Importing the app: ~2.0-2.3 s of CPU. Child processes the tests start choose their own loader.
import { build } from 'esbuild';
import { existsSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { register } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const versionOf = (pkg) => JSON.parse(readFileSync(path.join(root, 'node_modules', pkg, 'package.json'), 'utf8')).version;
const typeboxVersion = versionOf('typebox');
const esbuildVersion = versionOf('esbuild');

/** The entry points of typebox's package.json `exports` ('.' is index). */
const TYPEBOX_ENTRIES = ['index', 'compile', 'error', 'format', 'guard', 'schema', 'system', 'type', 'value'];

const typeboxDir = path.join(os.tmpdir(), `payd-test-typebox-${typeboxVersion}-${esbuildVersion}`);
if (!existsSync(path.join(typeboxDir, 'index.js'))) {
  const building = `${typeboxDir}.${process.pid}.tmp`;
  await build({
    entryPoints: Object.fromEntries(TYPEBOX_ENTRIES.map((e) => [e, e === 'index' ? 'typebox' : `typebox/${e}`])),
    absWorkingDir: root,
    bundle: true, splitting: true, format: 'esm', platform: 'node', target: 'node20',
    outdir: building, logLevel: 'warning',
  });
  try {
    renameSync(building, typeboxDir);
  } catch {
    rmSync(building, { recursive: true, force: true }); // another process made it first
  }
}

process.setSourceMapsEnabled(true);
register('./test-loader-hooks.js', import.meta.url, { data: { typeboxDir: pathToFileURL(`${typeboxDir}/`).href, esbuildVersion } });
