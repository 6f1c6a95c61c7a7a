// The module hooks of the test processes (registered by scripts/test-loader.js; see there why).
// Runs on Node's hooks thread: every module of a test process passes through here, so each
// hook does as little as it can for a module that is not TypeScript.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where the bundled TypeBox entry points are (made by test-loader.js), and where compiled files are kept. */
let typeboxDir = '';
let cacheDir = '';
let esbuild;

export async function initialize(data) {
  typeboxDir = data.typeboxDir;
  cacheDir = path.join(os.tmpdir(), `payd-test-ts-${data.esbuildVersion}`);
  mkdirSync(cacheDir, { recursive: true });
}

const TSCONFIG = { compilerOptions: { verbatimModuleSyntax: true, jsx: 'react-jsx', jsxImportSource: 'preact' } };
/** What else decides the compiled form, in each cached file's key. */
const OPTIONS_KEY = JSON.stringify({ TSCONFIG, target: 'node20', sourcemap: 'inline' });

export async function resolve(specifier, context, next) {
  if (specifier === 'typebox' || specifier.startsWith('typebox/')) {
    const entry = specifier === 'typebox' ? 'index' : specifier.slice('typebox/'.length);
    return { url: new URL(`${entry}.js`, typeboxDir).href, format: 'module', shortCircuit: true };
  }
  return next(specifier, context);
}

export async function load(url, context, next) {
  if (!url.startsWith('file:') || !/\.tsx?$/.test(url)) return next(url, context);
  const file = fileURLToPath(url);
  const source = readFileSync(file, 'utf8');
  // The compiled form is kept on disk by content: a test process compiles only what changed.
  const key = createHash('sha256').update(`${OPTIONS_KEY}\0${file}\0`).update(source).digest('hex');
  const cached = path.join(cacheDir, `${key}.js`);
  try {
    return { format: 'module', source: readFileSync(cached, 'utf8'), shortCircuit: true };
  } catch {
    esbuild ??= await import('esbuild');
    const { code } = esbuild.transformSync(source, {
      loader: file.endsWith('.tsx') ? 'tsx' : 'ts', format: 'esm', target: 'node20',
      sourcemap: 'inline', sourcefile: file, tsconfigRaw: TSCONFIG,
    });
    const tmp = `${cached}.${process.pid}.tmp`;
    writeFileSync(tmp, code);
    renameSync(tmp, cached);
    return { format: 'module', source: code, shortCircuit: true };
  }
}
