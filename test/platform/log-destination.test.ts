// payd start's log destination (logger.ts, turnBatched): the lines of a turn reach stdout
// together at its end, in order, and none is lost when the process exits at once.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const logger = fileURLToPath(new URL('../../src/platform/observability/logger.ts', import.meta.url));

function run(script: string): string[] {
  const res = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', `import { turnBatched } from ${JSON.stringify(logger)};\n${script}`], { encoding: 'utf8' });
  assert.equal(res.status, 0, res.stderr);
  return res.stdout.split('\n').filter(Boolean);
}

describe('the log destination of payd start', () => {
  it('writes every line, in order, a turn at a time', () => {
    const lines = run(`
      const out = turnBatched();
      let n = 0;
      const turn = () => { for (let i = 0; i < 100; i++) out.write(\`line \${n++}\\n\`); if (n < 5000) setImmediate(turn); };
      turn();`);
    assert.equal(lines.length, 5000);
    lines.forEach((l, i) => assert.equal(l, `line ${i}`));
  });

  it('writes the lines of the last turn when the process exits within it (process.exit)', () => {
    const lines = run(`
      const out = turnBatched();
      for (let i = 0; i < 3000; i++) out.write(\`early \${i} \${'x'.repeat(100)}\\n\`);
      setImmediate(() => { for (let i = 0; i < 20; i++) out.write(\`last \${i}\\n\`); process.exit(0); });`);
    assert.equal(lines.length, 3020);
    assert.deepEqual(lines.slice(-20), Array.from({ length: 20 }, (_, i) => `last ${i}`));
    assert.equal(lines[0], `early 0 ${'x'.repeat(100)}`);
  });

  it('flushSync writes what waits', () => {
    const lines = run(`
      const out = turnBatched();
      out.write('a\\n'); out.write('b\\n');
      out.flushSync();
      process.stdout.write('c\\n');`);
    assert.deepEqual(lines, ['a', 'b', 'c']);
  });
});
