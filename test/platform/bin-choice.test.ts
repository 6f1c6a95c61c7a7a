// bin/payd.js chooses what it runs: the compiled dist/server/payd.js when it is at least as
// new as every file under src/ (or when there is no src/, as in an installed package),
// else the TypeScript sources through tsx. PAYD_FROM_SOURCES=1 always runs the sources;
// PAYD_FROM_SOURCES=0 never does: it exits 2 with one line saying to build, which is what
// the benches rely on so that they never time the sources for what users run.
// Each case copies bin/payd.js beside a stand-in dist/ and src/ that say which ran.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

interface Run { code: number | null; stdout: string; stderr: string }

function run(dir: string, env: Record<string, string>): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(dir, 'bin/payd.js'), 'start'], {
      env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    child.once('exit', (code) => setImmediate(() => resolve({ code, stdout, stderr })));
  });
}

describe('bin/payd.js: dist/ or the sources', () => {
  let root: string;
  before(() => {
    root = mkdtempSync(path.join(os.tmpdir(), 'payd-bin-'));
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  /** A checkout: bin/payd.js, a dist/ and (unless withSrc is false) a src/, dist `distAge` seconds older than src (negative: newer). */
  const checkout = (name: string, distAge: number, withSrc = true): string => {
    const dir = path.join(root, name);
    mkdirSync(path.join(dir, 'bin'), { recursive: true });
    mkdirSync(path.join(dir, 'dist/server'), { recursive: true });
    copyFileSync('bin/payd.js', path.join(dir, 'bin/payd.js'));
    writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'payd', version: '0.0.0', type: 'module' }));
    symlinkSync(path.resolve('node_modules'), path.join(dir, 'node_modules'));
    const dist = path.join(dir, 'dist/server/payd.js');
    writeFileSync(dist, "console.log('from dist');\n");
    const now = Date.now() / 1000;
    utimesSync(dist, now - Math.max(distAge, 0), now - Math.max(distAge, 0));
    if (withSrc) {
      mkdirSync(path.join(dir, 'src/nested'), { recursive: true });
      writeFileSync(path.join(dir, 'src/main.ts'), "const from: string = 'from sources';\nconsole.log(from);\n");
      // The newest source is a nested one: the whole tree counts.
      writeFileSync(path.join(dir, 'src/nested/edited.ts'), 'export {};\n');
      const t = now - Math.max(-distAge, 0);
      utimesSync(path.join(dir, 'src/main.ts'), t - 60, t - 60);
      utimesSync(path.join(dir, 'src/nested/edited.ts'), t, t);
    }
    return dir;
  };

  it('runs dist/ when it is current, the sources when a file under src/ is newer', async () => {
    const current = await run(checkout('current', -10), {});
    assert.equal(current.stdout.trim(), 'from dist', current.stderr);
    const edited = await run(checkout('edited', 10), {});
    assert.equal(edited.stdout.trim(), 'from sources', edited.stderr);
    const installed = await run(checkout('installed', 10, false), {});
    assert.equal(installed.stdout.trim(), 'from dist', 'an installed package has no src/');
  });

  it('PAYD_FROM_SOURCES=1 runs the sources even with a current dist/', async () => {
    const r = await run(checkout('forced', -10), { PAYD_FROM_SOURCES: '1' });
    assert.equal(r.stdout.trim(), 'from sources', r.stderr);
  });

  it('PAYD_FROM_SOURCES=0 runs a current dist/, and refuses the sources: exit 2, one line saying to build', async () => {
    const current = await run(checkout('compiled-only', -10), { PAYD_FROM_SOURCES: '0' });
    assert.equal(current.stdout.trim(), 'from dist', current.stderr);
    const stale = await run(checkout('stale', 10), { PAYD_FROM_SOURCES: '0' });
    assert.equal(stale.code, 2);
    assert.equal(stale.stdout, '', 'neither dist/ nor the sources ran');
    assert.equal(stale.stderr, 'payd: dist/ is missing or older than src/ and PAYD_FROM_SOURCES=0: run `npm run build`\n');
  });
});
