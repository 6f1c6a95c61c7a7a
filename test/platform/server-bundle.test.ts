// Issue 17: `payd start` runs the server bundled by esbuild (npm run build writes it to
// dist/server/; scripts/bundle-server.js). The tests elsewhere run the TypeScript
// sources, so this one bundles the sources the same way, into a directory of its own
// under dist/, and uses the result as an operator would: migrate, start, then the parts
// that load files or packages at run time (the widget, Swagger UI, PGlite's WASM,
// argon2 for a password, the zxcvbn dictionaries), a token and a payment with its capture.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
// @ts-expect-error a plain JavaScript build script, without types
import { bundleServer, SERVER_EXTERNALS } from '../../scripts/bundle-server.js';
import { ADMIN_TOKEN } from '../helpers/app.ts';
import { emptyPlace, freePort, type Place, SERVER_MASTER_KEY } from '../helpers/processes.ts';
import { waitFor } from '../helpers/wait.ts';

const outdir = path.resolve('dist', `.test-server-${process.pid}`);
const entry = path.join(outdir, 'payd.js');

function run(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [entry, ...args], {
      env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', LOG_LEVEL: 'warn', PAYD_DEMO: '0', PAYD_MASTER_KEY: SERVER_MASTER_KEY, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    child.once('exit', (code) => setImmediate(() => resolve({ code, stdout, stderr })));
  });
}

describe('the bundled server (dist/server/payd.js, what payd start runs)', { timeout: 240_000 }, () => {
  let db: Place;
  let child: ChildProcess | undefined;
  let base = '';
  let stdout = '';
  let stderr = '';
  let exited: Promise<number | null>;

  before(async () => {
    await bundleServer(outdir);
    db = await emptyPlace();
  });

  after(async () => {
    if (child && child.exitCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
    await db.close();
    rmSync(outdir, { recursive: true, force: true });
  });

  it('is a few files that leave the packages reading their own files outside', () => {
    const files = readdirSync(outdir);
    assert.ok(files.includes('payd.js'));
    assert.ok(files.length < 60, `${files.length} files`);
    assert.deepEqual(SERVER_EXTERNALS.filter((p: string) => !existsSync(path.join('node_modules', p))).filter((p: string) => p !== 'pg-native'), [], 'externals are installed');
  });

  it('answers --help, and migrates the database', async () => {
    const help = await run(['--help'], {});
    assert.equal(help.code, 0, help.stderr);
    assert.match(help.stdout, /^payd \d+\.\d+\.\d+/);
    const migrated = await run(['migrate'], db.env);
    assert.equal(migrated.code, 0, migrated.stderr);
  });

  it('starts with the demo merchant and serves what loads files at run time', async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    child = spawn(process.execPath, [entry, 'start'], {
      env: {
        PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: String(port), PAYD_BASE_URL: base, LOG_LEVEL: 'info', PAYD_DEMO: '1',
        PAYD_MASTER_KEY: SERVER_MASTER_KEY, PAYD_ADMIN_TOKEN: ADMIN_TOKEN, ...db.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    exited = new Promise((resolve) => child!.once('exit', (code) => resolve(code)));
    child.stdout!.on('data', (d: Buffer) => { stdout += d.toString(); });
    child.stderr!.on('data', (d: Buffer) => { stderr += d.toString(); });
    const deadline = Date.now() + 180_000;
    await waitFor(() => {
      if (/API key:\s+payd_sk_\S+/.test(stdout)) return true;
      assert.equal(child!.exitCode, null, `exited early: ${stderr}`);
      assert.ok(Date.now() < deadline, `not ready in 180 s: ${stderr}`);
      return false;
    }, { timeout: 190_000, every: 100, what: 'the demo API key on stdout' });
    assert.match(stdout, /"msg":"started"/, 'the start-up phases are logged');
    assert.match(stdout, /"startupMs":\{"loaded":\d+,"database":\d+,"app":\d+,"listening":\d+,"ready":\d+\}/);

    const widget = await fetch(`${base}/checkout/widget.js`);
    assert.equal(widget.status, 200);
    assert.match(widget.headers.get('content-type') ?? '', /javascript/);
    assert.ok((await widget.text()).length > 1000);
    const cardFrame = await fetch(`${base}/checkout/card-frame.js`);
    assert.equal(cardFrame.status, 200);
    assert.ok((await cardFrame.text()).length > 1000);

    const docs = await fetch(`${base}/docs/`);
    assert.equal(docs.status, 200, 'Swagger UI (from node_modules) serves its page');
    assert.match(await docs.text(), /swagger/i);
    const openapi = await fetch(`${base}/openapi.json`);
    assert.equal(openapi.status, 200);
    assert.equal(((await openapi.json()) as { openapi: string }).openapi, '3.1.0');

    // The password strength meter loads its dictionaries on first use.
    const strength = await fetch(`${base}/identity/v1/password/strength`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ password: 'correct horse battery staple' }),
    });
    assert.equal(strength.status, 200, await strength.clone().text());
    assert.ok(((await strength.json()) as { score: number }).score >= 3);
  });

  it('takes a token, a payment and its capture', async () => {
    const apiKey = /API key:\s+(payd_sk_\S+)/.exec(stdout)![1]!;
    const token = await fetch(`${base}/oauth/token`, {
      method: 'POST', headers: { 'x-api-key': apiKey, 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=client_credentials',
    });
    assert.equal(token.status, 200);
    const auth = { authorization: `Bearer ${((await token.json()) as { access_token: string }).access_token}`, 'content-type': 'application/json' };
    const card = { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2030', cvv: '123' };
    const created = await fetch(`${base}/v2/payments`, {
      method: 'POST', headers: auth,
      body: JSON.stringify({ amount: 2500, currency: 'EUR', capture_mode: 'MANUAL', split: [{ partner: 'card-sim', method: 'CARD', amount: 2500, instrument: card }] }),
    });
    assert.equal(created.status, 200, await created.clone().text());
    const payment = (await created.json()) as { id: string };
    const captured = await fetch(`${base}/v2/payments/${payment.id}/captures`, { method: 'POST', headers: auth, body: JSON.stringify({ amount: 2500 }) });
    assert.equal(captured.status, 200, await captured.clone().text());
  });

  it('stops on SIGTERM with exit code 0', async () => {
    child!.kill('SIGTERM');
    assert.equal(await exited, 0, stderr);
  });

  // Tracing (docs/operations.md, Tracing): the SDK and the OTLP exporter load from the
  // bundle, spans reach a collector (by the end of a SIGTERM at the latest), and the
  // request's log lines carry its trace id.
  it('sends its spans to an OTLP collector with PAYD_OTEL_EXPORTER=otlp', async () => {
    const posts: Array<{ url: string; body: string }> = [];
    const collector = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => { body += c.toString(); });
      req.on('end', () => {
        posts.push({ url: req.url ?? '', body });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
    try {
      const port = await freePort();
      let out = '';
      const traced = spawn(process.execPath, [entry, 'start'], {
        env: {
          PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: String(port), PAYD_BASE_URL: `http://127.0.0.1:${port}`, LOG_LEVEL: 'info', PAYD_DEMO: '0',
          PAYD_MASTER_KEY: SERVER_MASTER_KEY, PAYD_ADMIN_TOKEN: ADMIN_TOKEN, ...db.env,
          PAYD_OTEL_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(collector.address() as AddressInfo).port}`,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const gone = new Promise<number | null>((resolve) => traced.once('exit', (code) => resolve(code)));
      // Started: its `started` line, awaited on the output itself (or its exit, a failure).
      const ready = new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`not ready in 120 s: ${out}`)), 120_000); // bounds the wait, not a sleep
        traced.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          if (/"msg":"started"/.test(out)) { clearTimeout(timer); resolve(); }
        });
        traced.once('exit', (code) => { clearTimeout(timer); reject(new Error(`exited early (${code}): ${out}`)); });
      });
      await ready;
      assert.match(out, /"tracing":"otlp"/);
      const apiKey = /API key:\s+(payd_sk_\S+)/.exec(stdout)![1]!;
      const token = await fetch(`http://127.0.0.1:${port}/oauth/token`, {
        method: 'POST', headers: { 'x-api-key': apiKey, 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=client_credentials',
      });
      assert.equal(token.status, 200);
      traced.kill('SIGTERM');
      assert.equal(await gone, 0, out);
      const spans = posts.filter((p) => p.url === '/v1/traces').flatMap((p) => (JSON.parse(p.body) as {
        resourceSpans: Array<{ scopeSpans: Array<{ spans: Array<{ traceId: string; name: string; parentSpanId?: string }> }> }>;
      }).resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans)));
      const server = spans.find((s) => s.name === 'POST /oauth/token');
      assert.ok(server, `spans: ${spans.map((s) => s.name).join(', ')}`);
      assert.ok(spans.some((s) => s.name === 'db.query' && s.traceId === server.traceId), 'its statements in its trace');
      const completed = out.split('\n').filter((l) => l.includes('"msg":"request completed"'));
      assert.ok(completed.some((l) => l.includes(`"trace_id":"${server.traceId}"`)), 'the request\'s log lines carry its trace id');
    } finally {
      collector.closeAllConnections();
      await new Promise((r) => collector.close(r));
    }
  });
});
