// `payd listen` and `payd trigger` (issue 18) against a real `payd start`: trigger makes
// the calls after which payd emits each event it knows; listen forwards the entity's new
// events to a local receiver, signed as the webhook is, byte for byte the webhook body.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { getEventListeners } from 'node:events';
import { createHmac } from 'node:crypto';
import http from 'node:http';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { ADMIN_TOKEN } from '../helpers/app.ts';
import { startPayd, type PaydProcess } from '../helpers/processes.ts';
import { poll, waitFor } from '../helpers/wait.ts';
import { createPgTestDb } from '../faults/db-fixture.ts';
import { verifyWebhookSignature } from '../../src/webhooks/signature.ts';
import { TRIGGERS, listen } from '../../src/cli/dev.ts';
import { EVENT_TYPES } from '../../src/webhooks/catalogue.ts';

const run = promisify(execFile);
// An empty home unless a test gives one: no profile of the machine's user (payd login) is read.
const emptyHome = mkdtempSync(path.join(tmpdir(), 'payd-cli-home-'));
const payd = (args: string[], env: Record<string, string>) =>
  run(process.execPath, ['bin/payd.js', ...args], { env: { PATH: process.env.PATH ?? '', HOME: emptyHome, ...env } });

describe('payd listen and payd trigger', () => {
  let server: PaydProcess;
  let cleanup: () => Promise<void> = async () => {};
  let env: Record<string, string> = {};
  let token = '';
  let listener: ChildProcess | undefined;
  let receiver: http.Server;
  const received: Array<{ url: string; headers: http.IncomingHttpHeaders; body: string }> = [];

  before(async () => {
    let dbEnv: Record<string, string>;
    if (process.env.DATABASE_URL) {
      const db = await createPgTestDb();
      dbEnv = { DATABASE_URL: db.url };
      cleanup = () => db.close();
    } else {
      const dir = mkdtempSync(path.join(tmpdir(), 'payd-cli-'));
      dbEnv = { PAYD_DATA_DIR: dir };
      cleanup = async () => rmSync(dir, { recursive: true, force: true });
    }
    // (The endpoint test's receiver is on this machine: private targets allowed, as on the embedded database by default.)
    server = await startPayd({ ...dbEnv, PAYD_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' });
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const entity = await (await fetch(`${server.base}/admin/v1/entities`, { method: 'POST', headers: { ...admin, 'content-type': 'application/json' }, body: '{"name":"CLI shop"}' })).json();
    const apiKey = (await (await fetch(`${server.base}/admin/v1/entities/${entity.id}/api-keys`, { method: 'POST', headers: admin })).json()).api_key;
    env = { PAYD_API_KEY: apiKey, PAYD_URL: server.base };
    token = (await (await fetch(`${server.base}/oauth/token`, { method: 'POST', headers: { 'x-api-key': apiKey, 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=client_credentials' })).json()).access_token;
    receiver = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => { received.push({ url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') }); res.writeHead(204).end(); });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  });
  after(async () => {
    listener?.kill('SIGINT');
    await new Promise<void>((resolve) => (receiver ? receiver.close(() => resolve()) : resolve()));
    if (server) assert.equal(await server.stop(), 0);
    await cleanup();
    rmSync(emptyHome, { recursive: true, force: true });
  });

  const events = async (type: string) =>
    (await (await fetch(`${server.base}/v2/events?type=${type}&limit=100`, { headers: { authorization: `Bearer ${token}` } })).json()).data as Array<{ id: string; type: string; data: { id?: string; endpoint_id?: string } }>;

  it('forwards new events, signed as the webhook would be, and prints a line for each', async () => {
    const target = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/webhooks`;
    // An event from before listen started is not forwarded.
    await payd(['trigger', 'payment.authorized'], env);
    listener = spawn(process.execPath, ['bin/payd.js', 'listen', '--forward-to', target, '--secret', 'whsec_cli_test', '--poll-ms', '200'],
      { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
    let printed = '';
    listener.stdout!.on('data', (c: Buffer) => { printed += c.toString(); });
    await poll(async () => printed, (p) => p.includes('Ready!'), { withinMs: 15_000 });
    assert.match(printed, /Ready! Forwarding your entity's events to http:\/\/127\.0\.0\.1:\d+\/webhooks/);

    const { stdout } = await payd(['trigger', 'payment.captured'], env);
    assert.match(stdout, /Done: payment\.captured will be sent for [0-9a-f-]{36}/);
    await poll(async () => received.length, (n) => n >= 2, { withinMs: 10_000 });
    assert.deepEqual(received.map((r) => JSON.parse(r.body).type).sort(), ['payment.authorized', 'payment.captured']);
    for (const r of received) {
      assert.equal(verifyWebhookSignature('whsec_cli_test', String(r.headers['payd-signature']), r.body), true);
      const id = JSON.parse(r.body).id;
      assert.equal(r.headers['payd-event-id'], id);
      const served = await (await fetch(`${server.base}/v2/events/${id}`, { headers: { authorization: `Bearer ${token}` } })).text();
      assert.equal(r.body, served, 'the body is the event as payd serves (and sends) it');
      assert.match(printed, new RegExp(`--> ${JSON.parse(r.body).type} \\[${id}\\]`));
      assert.match(printed, new RegExp(`<-- {2}\\[204\\] POST ${target.replace(/[.]/g, '\\.')} \\[${id}\\]`));
    }
  });

  it('knows every event type of the catalogue', () => {
    assert.deepEqual(Object.keys(TRIGGERS).sort(), EVENT_TYPES.map((e) => e.type).sort());
  });

  it('makes every event it names, for real', async () => {
    // webhook_endpoint.test goes to one of the entity's endpoints: one for this test.
    const endpoint = await (await fetch(`${server.base}/v2/webhook-endpoints`, {
      method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'x-idempotency-key': `trigger-${Date.now()}` },
      body: JSON.stringify({ url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/trigger-endpoint`, enabled_events: ['payment.authorized'] }),
    })).json() as { id: string };
    try {
      for (const type of Object.keys(TRIGGERS)) {
        const before = (await events(type)).length;
        const { stdout } = await payd(['trigger', type], env);
        assert.match(stdout, new RegExp(`Done: ${type.replace(/[.]/g, '\\.')} will be sent for [0-9a-f-]{36}`), type);
        assert.equal((await events(type)).length, before + 1, type);
      }
    } finally {
      await fetch(`${server.base}/v2/webhook-endpoints/${endpoint.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } });
    }
  });

  it('trigger takes --amount and --currency, and says which it cannot take', async () => {
    const { stdout } = await payd(['trigger', 'payment.captured', '--amount', '1234', '--currency', 'usd'], env);
    const id = /for ([0-9a-f-]{36})/.exec(stdout)![1]!;
    const payment = await (await fetch(`${server.base}/v2/payments/${id}`, { headers: { authorization: `Bearer ${token}` } })).json();
    assert.equal(payment.amount, 1234);
    assert.equal(payment.currency, 'USD');
    assert.equal(payment.amounts.total_captured, 1234, 'the capture takes the whole overridden amount');
    const link = await payd(['trigger', 'payment_link.paid', '--amount', '777'], env);
    const linkId = /for ([0-9a-f-]{36})/.exec(link.stdout)![1]!;
    const paid = await (await fetch(`${server.base}/v2/payment-links/${linkId}`, { headers: { authorization: `Bearer ${token}` } })).json();
    assert.equal(paid.status, 'PAID');
    assert.equal(paid.amount, 777);
    for (const [args, message] of [
      [['trigger', 'payment.void_conflict', '--currency', 'USD'], /--currency USD: .*gift card simulator takes EUR only/],
      [['trigger', 'payment.captured', '--amount', '12.50'], /--amount: an amount in minor units/],
      [['trigger', 'payment.captured', '--currency', 'EURO'], /--currency: a three-letter/],
    ] as const) {
      const err = await payd([...args], env).then(() => assert.fail('exit 0'), (x: { code: number; stderr: string }) => x);
      assert.equal(err.code, 2, err.stderr);
      assert.match(err.stderr, message);
    }
  });

  it('listen keeps one abort listener however long it polls', async () => {
    const stop = new AbortController();
    const lines: string[] = [];
    const target = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/webhooks`;
    // Counts listen's polls (it runs in this process): each asks the events API from the oldest.
    let polls = 0;
    const realFetch = globalThis.fetch;
    globalThis.fetch = (input, init) => {
      if (String(input instanceof Request ? input.url : input).includes('/v2/events?order=asc')) polls++;
      return realFetch(input, init);
    };
    let running: Promise<void> | undefined;
    try {
      running = listen(['--forward-to', target, '--secret', 'whsec_cli_test', '--poll-ms', '100'], env, (l) => lines.push(l), stop.signal);
      // Six polls or more (each waits 100 ms), counted rather than waited for.
      await waitFor(() => polls >= 7, { what: 'six polls of listen' });
    } finally {
      globalThis.fetch = realFetch;
    }
    assert.ok(getEventListeners(stop.signal, 'abort').length <= 1, `${getEventListeners(stop.signal, 'abort').length} abort listeners after some polls`);
    stop.abort();
    await running;
  });

  it('refuses an unknown event, a missing key and a missing --forward-to with one line and exit code 2', async () => {
    for (const [args, message, e] of [
      [['trigger', 'payment.exploded'], /cannot make "payment\.exploded"; it makes: payment\.authorized/, env],
      [['trigger', 'payment.captured'], /an API key is needed/, { PAYD_URL: env.PAYD_URL! }],
      [['listen'], /--forward-to <http\(s\) URL/, env],
      [['listen', '--forward-to', 'http://127.0.0.1:1/x', '--colour'], /Unknown option '--colour'/, env],
    ] as const) {
      const err = await payd([...args], e as Record<string, string>).then(() => assert.fail('exit 0'), (x: { code: number; stderr: string }) => x);
      assert.equal(err.code, 2, err.stderr);
      assert.match(err.stderr, message);
      assert.equal(err.stderr.trim().split('\n').length, 1, err.stderr);
    }
  });
  // Issue 43 item 2: resources from the shell, as the SDK calls them (a key on every creating call).
  it('payd webhook-endpoints creates, lists, updates, rotates and deletes an endpoint, which receives its test event', async () => {
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/cli-endpoint`;
    const created = await payd(['webhook-endpoints', 'create', '--url', url, '--events', 'payment.captured,payment.refunded', '--description', 'CLI'], env);
    const id = /^([0-9a-f-]{36}) {2}enabled {2}payment\.captured,payment\.refunded {2}/m.exec(created.stdout)?.[1];
    assert.ok(id, created.stdout);
    const secret = /signing secret \(shown once\): (whsec_\S+)/.exec(created.stdout)![1]!;
    assert.match((await payd(['webhook-endpoints', 'list'], env)).stdout, new RegExp(`^${id}  enabled  .*${url}  CLI$`, 'm'));
    assert.equal(JSON.parse((await payd(['webhook-endpoints', 'get', id], env)).stdout).url, url);
    assert.match((await payd(['webhook-endpoints', 'update', id, '--events', '*'], env)).stdout, new RegExp(`^${id}  enabled  \\*  `, 'm'));
    const sent = await payd(['webhook-endpoints', 'test', id], env);
    const [, eventId, deliveryId] = /test event ([0-9a-f-]{36}) queued \(delivery ([0-9a-f-]{36})\)/.exec(sent.stdout)!;
    // Sent with a fresh key, printed: the same key again (a retry of a lost answer) sends nothing more.
    const testKey = /^idempotency key (\S+) \(retry a lost answer with --idempotency-key \1\)$/m.exec(sent.stdout)?.[1];
    assert.ok(testKey, sent.stdout);
    const retried = await payd(['webhook-endpoints', 'test', id, '--idempotency-key', testKey], env).then(() => assert.fail('exit 0'), (e: { code: number; stderr: string }) => e);
    assert.equal(retried.code, 2);
    assert.match(retried.stderr, /HTTP 409/);
    const tests = (await events('webhook_endpoint.test')).filter((e) => e.data.endpoint_id === id);
    assert.deepEqual(tests.map((e) => e.id), [eventId], 'one test event for one key');
    // Its delivery to the endpoint (the `payd listen` of an earlier test forwards a copy of each event to the same receiver).
    const arrived = () => received.find((r) => r.headers['payd-event-id'] === eventId && r.headers['payd-delivery-id'] === deliveryId);
    const call = await poll(async () => arrived(), (c) => c !== undefined, { withinMs: 30_000 });
    assert.ok(call, 'the test event arrived');
    assert.equal(call.headers['payd-event-type'], 'webhook_endpoint.test');
    const sig = String(call.headers['payd-signature']);
    const ts = /t=(\d+)/.exec(sig)![1]!;
    assert.ok(sig.includes(`v1=${createHmac('sha256', secret).update(`${ts}.${call.body}`).digest('hex')}`), 'signed with the secret create printed');
    assert.match((await payd(['webhook-endpoints', 'rotate', id, '--previous-valid-seconds', '0'], env)).stdout, /signing secret version 2 \(shown once\): whsec_/);
    assert.match((await payd(['webhook-endpoints', 'delete', id], env)).stdout, new RegExp(`deleted ${id}`));
    assert.doesNotMatch((await payd(['webhook-endpoints', 'list'], env)).stdout, new RegExp(id));
    for (const [args, message] of [
      [['webhook-endpoints', 'create'], /--url <https:\/\/\.\.\.> is needed/],
      [['webhook-endpoints', 'create', '--url', url, '--events', 'payment.exploded'], /HTTP 400 .*payment\.exploded/],
      [['webhook-endpoints', 'get', id], /HTTP 404/],
      [['webhook-endpoints', 'explode'], /payd webhook-endpoints <list\|create/],
    ] as const) {
      const err = await payd([...args], env).then(() => assert.fail('exit 0'), (e: { code: number; stderr: string }) => e);
      assert.equal(err.code, 2, String(args));
      assert.match(err.stderr, message);
    }
  });

  // Issue 43: a profile, so that the key need not be in the environment of every command.
  it('payd login keeps the key in a 0600 file under XDG_CONFIG_HOME (default ~/.config), which every client command reads; --profile picks one', async () => {
    const home = mkdtempSync(path.join(tmpdir(), 'payd-home-'));
    const xdg = mkdtempSync(path.join(tmpdir(), 'payd-xdg-'));
    try {
      const apiKey = env.PAYD_API_KEY!;
      const login = await payd(['login', '--api-key', apiKey, '--base-url', env.PAYD_URL!], { HOME: home });
      assert.ok(!login.stdout.includes(apiKey) && !login.stderr.includes(apiKey), `the key is not printed back in full:\n${login.stdout}`);
      assert.match(login.stdout, new RegExp(`key ${apiKey.slice(0, 8)}…${apiKey.slice(-4)}`));
      const file = path.join(home, '.config', 'payd', 'config.json');
      assert.equal(statSync(file).mode & 0o777, 0o600);
      assert.equal(statSync(path.dirname(file)).mode & 0o777, 0o700);
      assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')).profiles.default, { api_key: apiKey, base_url: env.PAYD_URL });

      // Every client command, with neither --api-key nor PAYD_API_KEY nor PAYD_URL.
      const made = await payd(['trigger', 'payment.authorized'], { HOME: home });
      const mine = /for ([0-9a-f-]{36})/.exec(made.stdout)![1]!;
      assert.match((await payd(['payments', 'list', '--limit', '100'], { HOME: home })).stdout, new RegExp(`^${mine}  `, 'm'));
      assert.match((await payd(['events', 'list', '--type', 'payment.authorized'], { HOME: home })).stdout, /payment\.authorized/);
      await payd(['webhook-endpoints', 'list'], { HOME: home });

      // Another entity's key in a profile of its own, under XDG_CONFIG_HOME (which wins over HOME).
      const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
      const entity = await (await fetch(`${server.base}/admin/v1/entities`, { method: 'POST', headers: { ...admin, 'content-type': 'application/json' }, body: '{"name":"CLI shop 2"}' })).json();
      const otherKey = (await (await fetch(`${server.base}/admin/v1/entities/${entity.id}/api-keys`, { method: 'POST', headers: admin })).json()).api_key as string;
      const both = { HOME: home, XDG_CONFIG_HOME: xdg };
      await payd(['login', '--api-key', otherKey, '--base-url', env.PAYD_URL!, '--profile', 'shop2'], both);
      assert.equal(statSync(path.join(xdg, 'payd', 'config.json')).mode & 0o777, 0o600);
      const theirs = /for ([0-9a-f-]{36})/.exec((await payd(['trigger', 'payment.authorized', '--profile', 'shop2'], both)).stdout)![1]!;
      const listed = (await payd(['payments', 'list', '--profile', 'shop2'], both)).stdout;
      assert.match(listed, new RegExp(`^${theirs}  `, 'm'));
      assert.doesNotMatch(listed, new RegExp(mine), 'the profile picked is the other entity\'s');
      assert.match((await payd(['payments', 'list'], { ...both, PAYD_PROFILE: 'shop2' })).stdout, new RegExp(`^${theirs}  `, 'm'));
      // PAYD_API_KEY comes before the default profile; --profile before PAYD_API_KEY.
      assert.doesNotMatch((await payd(['payments', 'list', '--limit', '100'], { HOME: home, PAYD_API_KEY: otherKey, PAYD_URL: env.PAYD_URL! })).stdout, new RegExp(mine));
      assert.match((await payd(['payments', 'list', '--limit', '100', '--profile', 'shop2'], { ...both, PAYD_API_KEY: apiKey, PAYD_URL: env.PAYD_URL! })).stdout, new RegExp(`^${theirs}  `, 'm'));

      for (const [args, e, message] of [
        [['payments', 'list'], both, /an API key is needed: .*payd login/], // XDG_CONFIG_HOME has no default profile
        [['payments', 'list', '--profile', 'nope'], { HOME: home }, /no profile "nope" in .*config\.json: payd login/],
        [['login', '--api-key', 'payd_sk_wrong_key_0000', '--base-url', env.PAYD_URL!, '--profile', 'bad'], { HOME: home }, /the API key was refused/],
        [['login', '--base-url', env.PAYD_URL!], { HOME: home }, /the key is needed/],
      ] as const) {
        const err = await payd([...args], e as Record<string, string>).then(() => assert.fail('exit 0'), (x: { code: number; stderr: string }) => x);
        assert.equal(err.code, 2, err.stderr);
        assert.match(err.stderr, message);
      }
      assert.deepEqual(Object.keys(JSON.parse(readFileSync(file, 'utf8')).profiles), ['default'], 'a refused key is not saved');
    } finally {
      rmSync(home, { recursive: true, force: true });
      rmSync(xdg, { recursive: true, force: true });
    }
  });

  it('payd payments list/get/capture/refund/void and payd events list/get work on a running payd', async () => {
    const made = await payd(['trigger', 'payment.authorized'], env);
    const id = /for ([0-9a-f-]{36})/.exec(made.stdout)![1]!;
    const list = await payd(['payments', 'list', '--limit', '5'], env);
    assert.match(list.stdout, new RegExp(`^${id}  .* AUTHORIZED  captured 0`, 'm'));
    const got = JSON.parse((await payd(['payments', 'get', id], env)).stdout);
    assert.equal(got.id, id);
    const captured = await payd(['payments', 'capture', id, '--amount', '1000'], env);
    assert.match(captured.stdout, /^idempotency key [0-9a-f-]{36} \(retry a lost answer with --idempotency-key/m);
    assert.match(captured.stdout, /capture asked: payment .* captured 1000/);
    const key = /idempotency key ([0-9a-f-]{36})/.exec(captured.stdout)![1]!;
    // The same key again is the same operation: refused as the spec says (409), nothing more captured.
    const again = await payd(['payments', 'capture', id, '--amount', '1000', '--idempotency-key', key], env).then(() => assert.fail('exit 0'), (e: { code: number; stderr: string }) => e);
    assert.equal(again.code, 2);
    assert.match(again.stderr, /HTTP 409/);
    assert.equal(JSON.parse((await payd(['payments', 'get', id], env)).stdout).amounts.total_captured, 1000);
    const refunded = await payd(['payments', 'refund', id, '--amount', '400'], env);
    assert.match(refunded.stdout, /refunded 400/);
    const events = await payd(['events', 'list', '--type', 'payment.captured,payment.refunded'], env);
    assert.match(events.stdout, /payment\.refunded/);
    assert.match(events.stdout, /payment\.captured/);
    const eventId = /^([0-9a-f-]{36}) {2}/m.exec(events.stdout)![1]!;
    assert.equal(JSON.parse((await payd(['events', 'get', eventId], env)).stdout).id, eventId);
    // events resend: the event again, to an endpoint of the entity, where it arrives.
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/cli-resend`;
    const endpointId = /^([0-9a-f-]{36}) {2}enabled/m.exec((await payd(['webhook-endpoints', 'create', '--url', url, '--events', 'payment.voided'], env)).stdout)![1]!;
    const resent = await payd(['events', 'resend', eventId, '--webhook-endpoint', endpointId], env);
    assert.match(resent.stdout, /^idempotency key [0-9a-f-]{36} \(retry a lost answer with --idempotency-key/m);
    const deliveryId = new RegExp(`^resent ${eventId}: delivery ([0-9a-f-]{36}) to ${url.replace(/[.]/g, '\\.')} \\(endpoint ${endpointId}\\)$`, 'm').exec(resent.stdout)?.[1];
    assert.ok(deliveryId, resent.stdout);
    const arrived = await poll(async () => received.find((r) => r.headers['payd-delivery-id'] === deliveryId), (c) => c !== undefined, { withinMs: 30_000 });
    assert.equal(arrived?.headers['payd-event-id'], eventId);
    assert.equal(JSON.parse(arrived!.body).id, eventId, 'the same event, whatever the endpoint\'s enabled_events');
    const resendKey = /idempotency key ([0-9a-f-]{36})/.exec(resent.stdout)![1]!;
    const replayed = await payd(['events', 'resend', eventId, '--webhook-endpoint', endpointId, '--idempotency-key', resendKey], env).then(() => assert.fail('exit 0'), (e: { code: number; stderr: string }) => e);
    assert.match(replayed.stderr, /HTTP 409/);
    await payd(['webhook-endpoints', 'delete', endpointId], env);
    for (const [args, message] of [
      [['payments', 'capture', id], /--amount \(minor units\) is needed/],
      [['payments', 'get', 'nope'], /a payments id \(uuid\) is needed|id \(uuid\) is needed/],
      [['payments', 'get', '00000000-0000-4000-8000-000000000000'], /HTTP 404/],
      [['payments', 'explode'], /payd payments <list\|get\|capture\|refund\|void>/],
      [['events', 'resend', '00000000-0000-4000-8000-000000000000'], /HTTP 404/],
      [['events', 'resend', eventId, '--webhook-endpoint', 'nope'], /--webhook-endpoint: a webhook endpoint id/],
    ] as const) {
      const err = await payd([...args], env).then(() => assert.fail('exit 0'), (e: { code: number; stderr: string }) => e);
      assert.equal(err.code, 2, String(args));
      assert.match(err.stderr, message);
      assert.equal(err.stderr.trim().split('\n').length, 1, err.stderr);
    }
  });

  // Issue 43 item 2, the options the tests above leave out: --json on the lists, list filters, void.
  it('lists print the API\'s page with --json; payments list takes --status and --reference; payments void voids', async () => {
    const reference = `cli-ref-${Date.now()}`;
    const res = await fetch(`${server.base}/v2/payments`, {
      method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'x-idempotency-key': reference },
      body: JSON.stringify({ amount: 4321, currency: 'EUR', capture_mode: 'MANUAL', order: { reference },
        split: [{ partner: 'card-sim', method: 'CARD', amount: 4321, instrument: { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2031', cvv: '123' } }] }),
    });
    assert.equal(res.status, 200);
    const mine = (await res.json()) as { id: string };
    const refused = /for ([0-9a-f-]{36})/.exec((await payd(['trigger', 'payment.refused'], env)).stdout)![1]!;
    type Listed = { object: string; data: Array<{ id: string; authorization?: { status: string }; order_reference?: string }>; has_more: boolean };
    const json = async (args: string[]) => JSON.parse((await payd([...args, '--json'], env)).stdout) as Listed;

    // --json: the API's page, the whole output parseable.
    const all = await json(['payments', 'list', '--limit', '100']);
    assert.equal(all.object, 'list');
    assert.equal(typeof all.has_more, 'boolean');
    assert.ok(all.data.some((p) => p.id === mine.id) && all.data.some((p) => p.id === refused), 'both payments listed');
    assert.deepEqual((await json(['payments', 'list', '--limit', '1'])).data.length, 1);

    // --reference: that order's payment only, in either form.
    assert.deepEqual((await json(['payments', 'list', '--reference', reference])).data.map((p) => p.id), [mine.id]);
    const table = (await payd(['payments', 'list', '--reference', reference], env)).stdout;
    assert.equal(table.trim().split('\n').length, 1, table);
    assert.match(table, new RegExp(`^${mine.id}  \\S+ \\S+  4321 EUR  AUTHORIZED  captured 0 refunded 0 voided 0  ${reference}$`, 'm'));
    assert.deepEqual((await json(['payments', 'list', '--reference', `${reference}-none`])).data, []);

    // --status: that status only.
    const refusedOnly = await json(['payments', 'list', '--status', 'REFUSED', '--limit', '100']);
    assert.ok(refusedOnly.data.some((p) => p.id === refused), 'the refused payment is listed');
    assert.ok(refusedOnly.data.every((p) => p.authorization?.status === 'REFUSED'), JSON.stringify(refusedOnly.data.map((p) => p.authorization?.status)));
    assert.ok(!refusedOnly.data.some((p) => p.id === mine.id));
    const badStatus = await payd(['payments', 'list', '--status', 'EXPLODED'], env).then(() => assert.fail('exit 0'), (e: { code: number; stderr: string }) => e);
    assert.equal(badStatus.code, 2);
    assert.match(badStatus.stderr, /HTTP 400/);

    // void: the whole authorized amount, with a printed key.
    const voided = await payd(['payments', 'void', mine.id], env);
    assert.match(voided.stdout, /^idempotency key [0-9a-f-]{36} \(retry a lost answer with --idempotency-key [0-9a-f-]{36}\)$/m);
    assert.match(voided.stdout, new RegExp(`^void asked: payment ${mine.id} captured 0 refunded 0 voided 4321 EUR$`, 'm'));
    const after = JSON.parse((await payd(['payments', 'get', mine.id], env)).stdout);
    assert.equal(after.amounts.total_voided, 4321);
    assert.equal(after.amounts.available_to_capture, 0);
    assert.match((await payd(['payments', 'list', '--reference', reference], env)).stdout, / voided 4321 /);

    // events list --json: the voided event, as its webhook body.
    const voidedEvents = await json(['events', 'list', '--type', 'payment.voided', '--limit', '100']) as unknown as { object: string; data: Array<{ id: string; type: string; data: { id: string } }> };
    assert.equal(voidedEvents.object, 'list');
    assert.ok(voidedEvents.data.every((e) => e.type === 'payment.voided'));
    assert.equal(voidedEvents.data.filter((e) => e.data.id === mine.id).length, 1, 'one payment.voided for the payment');

    // webhook-endpoints list --json.
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/cli-json`;
    const endpointId = /^([0-9a-f-]{36}) {2}enabled/m.exec((await payd(['webhook-endpoints', 'create', '--url', url, '--events', 'payment.voided'], env)).stdout)![1]!;
    try {
      const endpoints = await json(['webhook-endpoints', 'list']) as unknown as { object: string; data: Array<{ id: string; url: string; secret?: string }> };
      assert.equal(endpoints.object, 'list');
      assert.deepEqual(endpoints.data.filter((e) => e.id === endpointId).map((e) => e.url), [url]);
      assert.ok(endpoints.data.every((e) => e.secret === undefined), 'no secret in a list');
    } finally {
      await payd(['webhook-endpoints', 'delete', endpointId], env);
    }
  });

  it('trigger webhook_endpoint.test --webhook-endpoint sends the test event to that endpoint only (without it: the first one listed)', async () => {
    const port = (receiver.address() as AddressInfo).port;
    const create = async (name: string) => /^([0-9a-f-]{36}) {2}enabled/m.exec((await payd(['webhook-endpoints', 'create', '--url', `http://127.0.0.1:${port}/${name}`, '--events', 'payment.voided'], env)).stdout)![1]!;
    const older = await create('trigger-older');
    const newer = await create('trigger-newer');
    const testsOf = async (endpoint: string) => (await events('webhook_endpoint.test')).filter((e) => e.data.endpoint_id === endpoint).map((e) => e.id);
    try {
      // The list is newest first: without the option the test goes to `newer`; with it, to `older`.
      const chosen = await payd(['trigger', 'webhook_endpoint.test', '--webhook-endpoint', older], env);
      assert.match(chosen.stdout, new RegExp(`^Done: webhook_endpoint\\.test will be sent for ${older} `, 'm'));
      const [eventId] = await testsOf(older);
      assert.ok(eventId, 'a test event for the endpoint named');
      const call = await poll(async () => received.find((r) => r.headers['payd-event-id'] === eventId && r.url === '/trigger-older'), (c) => c !== undefined, { withinMs: 30_000 });
      assert.equal(JSON.parse(call!.body).data.endpoint_id, older);
      assert.deepEqual(await testsOf(newer), [], 'nothing for the other endpoint');
      assert.equal(received.filter((r) => r.url === '/trigger-newer').length, 0);

      const byDefault = await payd(['trigger', 'webhook_endpoint.test'], env);
      assert.match(byDefault.stdout, new RegExp(`^Done: webhook_endpoint\\.test will be sent for ${newer} `, 'm'));
      assert.equal((await testsOf(newer)).length, 1);
      assert.equal((await testsOf(older)).length, 1);

      for (const [args, message] of [
        [['trigger', 'webhook_endpoint.test', '--webhook-endpoint', '00000000-0000-4000-8000-000000000000'], /HTTP 404/],
        [['trigger', 'webhook_endpoint.test', '--webhook-endpoint', 'nope'], /--webhook-endpoint: a webhook endpoint id \(uuid\)/],
      ] as const) {
        const err = await payd([...args], env).then(() => assert.fail('exit 0'), (e: { code: number; stderr: string }) => e);
        assert.equal(err.code, 2, String(args));
        assert.match(err.stderr, message);
      }
    } finally {
      await payd(['webhook-endpoints', 'delete', older], env);
      await payd(['webhook-endpoints', 'delete', newer], env);
    }
  });
});
