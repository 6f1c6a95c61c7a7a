// Every code block of README.md and docs/*.md works as written (issue 18): JavaScript
// runs against a real `payd start` (with the documented base URL pointed at it, and the
// environment the block names); a server block is started and sent a signed webhook;
// the eligibility sample request gets exactly the sample answer; JSON parses; shell
// passes `bash -n`; TypeScript fragments for module authors compile. The SQL block of
// docs/operations.md runs in test/platform/grants.test.ts; the HTML widget snippet is
// what examples/checkout-shop serves to the browser tests (test/e2e/checkout.e2e.test.ts).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { transform } from 'esbuild';
import { ADMIN_TOKEN } from '../helpers/app.ts';
import { freePort, startPayd, type PaydProcess } from '../helpers/processes.ts';
import { createPgTestDb } from '../faults/db-fixture.ts';
import { signWebhook } from '../../src/webhooks/signature.ts';
import { poll } from '../helpers/wait.ts';
import { docBlocks, DOCS_ROOT, where } from '../helpers/doc-blocks.ts';

const root = DOCS_ROOT;
const run = promisify(execFile);

const ALL = docBlocks();

describe('documentation code blocks', () => {
  let server: PaydProcess;
  let cleanup: () => Promise<void> = async () => {};
  const env: Record<string, string> = {};
  let token = '';

  /** A merchant of its own for each block (the blocks reuse idempotency keys, as examples do). */
  async function newMerchant() {
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const entity = await (await fetch(`${server.base}/admin/v1/entities`, { method: 'POST', headers: { ...admin, 'content-type': 'application/json' }, body: '{"name":"Docs shop"}' })).json();
    env.PAYD_ENTITY_ID = entity.id;
    env.PAYD_API_KEY = (await (await fetch(`${server.base}/admin/v1/entities/${entity.id}/api-keys`, { method: 'POST', headers: admin })).json()).api_key;
    env.PAYD_WEBHOOK_SECRET = (await (await fetch(`${server.base}/admin/v1/entities/${entity.id}/webhook-secret`, { headers: admin })).json()).secret;
  }

  before(async () => {
    let dbEnv: Record<string, string>;
    if (process.env.DATABASE_URL) {
      const db = await createPgTestDb();
      dbEnv = { DATABASE_URL: db.url };
      cleanup = () => db.close();
    } else {
      const dir = mkdtempSync(path.join(tmpdir(), 'payd-docs-'));
      dbEnv = { PAYD_DATA_DIR: dir };
      cleanup = async () => rmSync(dir, { recursive: true, force: true });
    }
    server = await startPayd(dbEnv);
    await newMerchant();
    token = (await (await fetch(`${server.base}/oauth/token`, {
      method: 'POST', headers: { 'x-api-key': env.PAYD_API_KEY!, 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=client_credentials',
    })).json()).access_token;
    await run(process.execPath, [`${root}node_modules/typescript/bin/tsc`, '-p', `${root}sdk/tsconfig.json`, '--outDir', `${root}sdk/dist`]);
    await run('cp', [`${root}sdk/src/openapi.d.ts`, `${root}sdk/dist/openapi.d.ts`]);
  });
  after(async () => {
    if (server) assert.equal(await server.stop(), 0);
    await cleanup();
  });

  it('finds the blocks', () => {
    assert.ok(ALL.filter((b) => b.lang === 'js').length >= 5, JSON.stringify(ALL.map(where)));
  });

  it('parses every JSON block', () => {
    for (const b of ALL.filter((x) => x.lang === 'json')) assert.doesNotThrow(() => JSON.parse(b.code), where(b));
  });

  it('passes bash -n on every shell block', async () => {
    for (const b of ALL.filter((x) => x.lang === 'sh')) {
      const file = path.join(tmpdir(), `payd-doc-${process.pid}.sh`);
      writeFileSync(file, b.code);
      await run('bash', ['-n', file]).catch((e: { stderr?: string }) => assert.fail(`${where(b)}: ${e.stderr}`));
    }
  });

  it('compiles every TypeScript fragment', async () => {
    for (const b of ALL.filter((x) => x.lang === 'ts')) {
      await transform(b.code, { loader: 'ts', format: 'esm' }).catch((e: Error) => assert.fail(`${where(b)}: ${e.message}`));
    }
  });

  it('answers the eligibility sample request with the sample answer', async () => {
    const samples = ALL.filter((b) => b.file === 'docs/eligibility.md' && b.lang === 'json');
    const res = await fetch(`${server.base}/v2/eligible-solutions`, {
      method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: samples[0]!.code,
    });
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), JSON.parse(samples[1]!.code), `${where(samples[1]!)} shows the answer to ${where(samples[0]!)}`);
  });

  for (const b of ALL.filter((x) => x.lang === 'js')) {
    it(`runs ${where(b)}`, async () => {
      await newMerchant();
      const port = await freePort();
      const code = b.code
        .replaceAll('http://localhost:3000', server.base)
        .replaceAll('https://payd.example.com', server.base)
        .replace(/\.listen\(\d+\)/, `.listen(${port}, '127.0.0.1')`);
      // In the repository root, so that './sdk/dist/index.js' and 'jose' resolve as documented.
      const file = `${root}.doc-block-${process.pid}.mjs`;
      writeFileSync(file, code);
      try {
        const child = spawn(process.execPath, [file], { cwd: root, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
        let output = '';
        child.stdout.on('data', (c: Buffer) => { output += c.toString(); });
        child.stderr.on('data', (c: Buffer) => { output += c.toString(); });
        const exited = new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
        if (/\.listen\(/.test(code)) {
          // A webhook receiver: it must accept a call payd signed, and refuse one it did not.
          const url = `http://127.0.0.1:${port}/`;
          // Asked until it answers (or exits).
          const up = await poll(() => fetch(url, { method: 'POST', body: '{}' }).then(() => true, () => false),
            (answered) => answered || child.exitCode !== null, { withinMs: 10_000, everyMs: 50 });
          assert.ok(up, `${where(b)} did not listen: ${output}`);
          const body = JSON.stringify({ id: crypto.randomUUID(), type: 'payment.captured', created_at: new Date().toISOString(), entity_id: env.PAYD_ENTITY_ID, data: {} });
          const signed = await fetch(url, { method: 'POST', body, headers: { 'payd-signature': signWebhook([env.PAYD_WEBHOOK_SECRET!], body, Math.floor(Date.now() / 1000)) } });
          assert.equal(signed.status, 204, `${where(b)}: a signed call is accepted (${output})`);
          const forged = await fetch(url, { method: 'POST', body, headers: { 'payd-signature': signWebhook(['whsec_forged'], body, Math.floor(Date.now() / 1000)) } });
          assert.equal(forged.status, 400, `${where(b)}: a forged call is refused`);
          child.kill();
          await exited;
        } else {
          const code = await Promise.race([exited, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 60_000))]); // bounds the run, not a sleep
          if (code === 'timeout') child.kill();
          assert.equal(code, 0, `${where(b)} exited with ${code}:\n${output}`);
        }
      } finally {
        rmSync(file, { force: true });
      }
    });
  }
});
