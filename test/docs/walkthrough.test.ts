// The README followed as a newcomer would (issue 43): payd started as `npm start` starts it
// (embedded database in a fresh directory, its own defaults, a free PORT), the demo merchant's
// key and dashboard sign-in read from what it prints; then the README's and docs' shell blocks
// run with bash exactly as written, apart from what the README tells the reader to set (KEY,
// BASE, the webhook URL): the First calls, a webhook endpoint from docs/webhooks.md whose
// deliveries a local receiver checks with that doc's verify function, the developer commands
// of "Command line", and the CSV export downloaded from the dashboard after a browser's
// sign-in (cookies, CSRF). Then "On PostgreSQL" and "Operator API" on a database the test
// creates on 127.0.0.1:5432 (createdb may be absent). Both parts run the same whatever
// DATABASE_URL says: the README's embedded start is embedded in both passes of `npm test`.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { DOCS_ROOT, sectionBlock, where } from '../helpers/doc-blocks.ts';
import { POSTGRES_URL } from '../helpers/db.ts';
import { emptyPgDatabase, freePort, startPayd, type PaydProcess, type PgDatabase } from '../helpers/processes.ts';
import { waitFor } from '../helpers/wait.ts';
import { hiddenFields } from '../identity/idp-helpers.ts';
import { parseCsv } from '../helpers/csv.ts';

// An empty home: no profile of the machine's user (payd login) is read by the developer commands.
const home = mkdtempSync(path.join(tmpdir(), 'payd-walk-home-'));
after(() => rmSync(home, { recursive: true, force: true }));

interface Shell { code: number; stdout: string; stderr: string }

/** Runs a script with bash in the repository root (where the README's `node bin/payd.js` lines run), with a clean environment. */
function bash(script: string, env: Record<string, string> = {}): Promise<Shell> {
  return new Promise((resolve) => {
    execFile('bash', ['-c', script], { cwd: DOCS_ROOT, timeout: 60_000, env: { PATH: process.env.PATH ?? '', HOME: home, ...env } }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
    });
  });
}

/** The JSON values written one after the other (curl -s ends none with a newline), skipping any text between them. */
function jsonValues(text: string): any[] {
  const out: unknown[] = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  let escaped = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (escaped) escaped = false;
      else if (c === '\\') escaped = true;
      else if (c === '"') inString = false;
    } else if (depth > 0 && c === '"') inString = true;
    else if (c === '{' || c === '[') {
      if (depth++ === 0) start = i;
    } else if ((c === '}' || c === ']') && depth > 0 && --depth === 0) out.push(JSON.parse(text.slice(start, i + 1)));
  }
  return out;
}

/** Replaces `from` (which must occur) by `to` in a block, so that a doc change that drops what the test sets fails here. */
function set(code: string, from: string | RegExp, to: string, block: string): string {
  const next = code.replace(from, to);
  assert.notEqual(next, code, `${block}: ${from} is gone from the block`);
  return next;
}

/** A browser's HTTP as far as the dashboard needs it: cookies kept (by name), redirects followed, forms posted. */
class Browser {
  private readonly cookies = new Map<string, string>();
  async open(url: string, init: { method?: string; form?: URLSearchParams } = {}): Promise<{ url: string; status: number; headers: Headers; text: string }> {
    let method = init.method ?? 'GET';
    let body: string | undefined = init.form?.toString();
    for (let hops = 0; hops < 10; hops++) {
      const res = await fetch(url, {
        method, redirect: 'manual', signal: AbortSignal.timeout(20_000),
        headers: { cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; '), ...(body !== undefined ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
        ...(body !== undefined ? { body } : {}),
      });
      for (const c of res.headers.getSetCookie()) {
        const [pair] = c.split(';');
        const eq = pair!.indexOf('=');
        this.cookies.set(pair!.slice(0, eq), pair!.slice(eq + 1));
      }
      const location = res.headers.get('location');
      if (res.status >= 300 && res.status < 400 && location) {
        await res.arrayBuffer();
        url = new URL(location, url).toString();
        method = 'GET';
        body = undefined;
        continue;
      }
      return { url, status: res.status, headers: res.headers, text: await res.text() };
    }
    throw new Error(`more than 10 redirects from ${url}`);
  }
}

const unescapeHtml = (s: string) => s.replace(/&amp;/g, '&').replace(/&quot;/g, '"').replace(/&#39;/g, "'");

describe('the README followed by a newcomer (embedded database, as npm start)', () => {
  let payd: PaydProcess;
  let dir: string;
  let port: number;
  let base: string;
  let printed: { entityId: string; apiKey: string; email: string; password: string };
  let token = '';
  let paymentId = '';
  let receiver: http.Server | undefined;
  const received: Array<{ headers: http.IncomingHttpHeaders; body: string; verified: boolean }> = [];

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'payd-walk-'));
    port = await freePort();
    base = `http://localhost:${port}`; // as payd prints it, and as the README's BASE is told to be on another port
    // As `npm start` in a fresh clone: payd's own defaults, the data in a fresh directory; only
    // HOST is set, so that the test does not listen on every interface of a shared machine.
    payd = await startPayd({ PORT: String(port), PAYD_DATA_DIR: path.join(dir, '.payd'), HOST: '127.0.0.1' }, { bare: true });
    await waitFor(() => /password: +\S+\n/.test(payd.output()), { timeout: 10_000, what: 'the dashboard sign-in printed' }).catch((e: Error) => assert.fail(`${e.message}:\n${payd.output()}`));
    const out = payd.output();
    printed = {
      entityId: /entity id: +(\S+)/.exec(out)![1]!,
      apiKey: /API key: +(payd_sk_\S+)/.exec(out)![1]!,
      email: /email: +(\S+)/.exec(out)![1]!,
      password: /password: +(\S+)/.exec(out)![1]!,
    };
  });
  after(async () => {
    receiver?.close();
    if (payd) assert.equal(await payd.stop(), 0);
    rmSync(dir, { recursive: true, force: true });
  });

  it('prints at first start what the README shows', () => {
    const block = sectionBlock('README.md', 'Quick start', '');
    // The README's lines, in order, each a whole line of the output; "..." stands for what differs each time.
    const lines = payd.output().split('\n').map((l) => l.trimEnd());
    let at = 0;
    for (const doc of block.code.split('\n').filter((l) => l.trim())) {
      const pattern = new RegExp(`^${doc.replaceAll('localhost:3000', `localhost:${port}`).split(/(\s+)/)
        .map((tok) => tok.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/[0-9a-f]*-?\\\.\\\.\\\./, '\\S+')).join('')}$`);
      const found = lines.findIndex((l, i) => i >= at && pattern.test(l));
      assert.ok(found >= 0, `${where(block)}: "${doc}" is not printed (after line ${at}):\n${payd.output()}`);
      at = found + 1;
    }
    assert.match(printed.entityId, /^[0-9a-f-]{36}$/);
    assert.equal(printed.email, 'admin@demo.payd.dev');
  });

  it('runs the First calls block as written, with the printed KEY and the BASE of its port', async () => {
    const block = sectionBlock('README.md', 'First calls', 'sh');
    let script = set(block.code, /^KEY=payd_sk_\.\.\. /m, `KEY=${printed.apiKey} `, where(block));
    script = set(script, /^BASE=http:\/\/localhost:3000$/m, `BASE=${base}`, where(block));
    // The test's own last line: what the reader's shell now holds, for the next steps.
    const run = await bash(`${script}\nprintf '\\n--walkthrough--\\n%s\\n%s\\n' "$TOKEN" "$PAYMENT_ID"`);
    assert.equal(run.code, 0, run.stderr);
    const [answers, kept] = run.stdout.split('\n--walkthrough--\n');
    [token, paymentId] = kept!.trim().split('\n') as [string, string];
    assert.match(token, /^eyJ/, 'step 1 keeps an access token in TOKEN');
    assert.equal(run.stderr, '');
    const [payment, captured, jwks, ...rest] = jsonValues(answers!);
    assert.deepEqual(rest, []);
    // Step 2 shows the payment and keeps its id.
    assert.equal(payment?.authorization?.status, 'AUTHORIZED', answers);
    assert.equal(payment.id, paymentId);
    assert.equal(payment.amount, 10000);
    // Step 3: the payment, captured 60.00 of 100.00.
    assert.equal(captured.id, paymentId, answers);
    assert.equal(captured.captures.length, 1);
    assert.equal(captured.captures[0].status, 'SUCCESS');
    assert.equal(captured.amounts.total_captured, 6000);
    assert.equal(captured.amounts.available_to_capture, 4000);
    // Step 4: the JWKS (public keys only).
    assert.ok(jwks.keys.length >= 1, answers);
    for (const k of jwks.keys) {
      assert.equal(k.use, 'sig');
      assert.equal(k.d, undefined);
    }
  });

  it('receives a webhook at an endpoint made as docs/webhooks.md says, its signature checked as that doc says', async () => {
    assert.ok(token, 'the First calls ran');
    const verifyBlock = sectionBlock('docs/webhooks.md', 'Verifying the signature', 'js', 1);
    const verifyFile = path.join(dir, 'verify.mjs');
    writeFileSync(verifyFile, verifyBlock.code);
    const { verify } = (await import(pathToFileURL(verifyFile).href)) as { verify: (secret: string, header: unknown, raw: Buffer) => boolean };
    let secret = '';
    receiver = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const raw = Buffer.concat(chunks);
        const verified = verify(secret, req.headers['payd-signature'], raw);
        received.push({ headers: req.headers, body: raw.toString('utf8'), verified });
        res.writeHead(verified ? 204 : 400).end();
      });
    });
    await new Promise<void>((resolve) => receiver!.listen(0, '127.0.0.1', resolve));
    const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/payd-events`;

    // The endpoint, with BASE and TOKEN of the First calls and the reader's own receiver URL.
    const block = sectionBlock('docs/webhooks.md', 'Where events go', 'sh');
    const script = set(block.code, 'https://merchant.example/payd-events', receiverUrl, where(block));
    const created = await bash(`BASE=${base}\nTOKEN=${token}\n${script}`);
    assert.equal(created.code, 0, created.stderr);
    const [endpoint] = jsonValues(created.stdout);
    assert.match(endpoint?.secret ?? '', /^whsec_/, `the answer carries the secret once: ${created.stdout}`);
    assert.deepEqual(endpoint.enabled_events, ['payment.captured', 'payment.refunded']);
    secret = endpoint.secret;

    // The capture of the First calls came before the endpoint: the README's commands list it and send it again.
    const cli = sectionBlock('README.md', 'Command line', 'sh');
    const line = (re: RegExp) => {
      const found = cli.code.split('\n').find((l) => re.test(l));
      assert.ok(found, `${where(cli)}: no line ${re}`);
      return found;
    };
    const env = { PAYD_API_KEY: printed.apiKey, PAYD_URL: base };
    const listed = await bash(line(/^node bin\/payd\.js events list /), env);
    assert.equal(listed.code, 0, listed.stderr);
    const eventId = /^(\S+) +\S+ \S+ +payment\.captured$/m.exec(listed.stdout)?.[1];
    assert.ok(eventId, `payment.captured listed: ${listed.stdout}`);
    const resent = await bash(line(/^node bin\/payd\.js events resend "\$EVENT_ID"/), { ...env, EVENT_ID: eventId });
    assert.equal(resent.code, 0, resent.stderr);

    await waitFor(() => received.some((r) => r.headers['payd-event-id'] === eventId), { timeout: 15_000, what: `a delivery of ${eventId}` }).catch((e: Error) => assert.fail(`${e.message}: ${JSON.stringify(received)}`));
    const call = received.find((r) => r.headers['payd-event-id'] === eventId)!;
    assert.ok(call.verified, 'the signature verifies with the endpoint secret, as docs/webhooks.md says');
    assert.equal(call.headers['x-merchant-token'], 's3cret');
    const event = JSON.parse(call.body);
    assert.equal(event.type, 'payment.captured');
    assert.equal(event.data.id, paymentId);
    assert.equal(event.data.operation.amount, 6000);
    assert.equal(verify('whsec_forged', call.headers['payd-signature'], Buffer.from(call.body)), false, 'another secret does not verify');
  });

  it('runs the developer commands of "Command line" on resources, with PAYD_API_KEY and PAYD_URL', async () => {
    assert.ok(paymentId, 'the First calls ran');
    const cli = sectionBlock('README.md', 'Command line', 'sh');
    const lines = cli.code.split('\n').filter((l) => /^node bin\/payd\.js (payments|events) /.test(l));
    const endpointLine = cli.code.split('\n').find((l) => /^node bin\/payd\.js webhook-endpoints create /.test(l));
    assert.ok(endpointLine, `${where(cli)}: payd webhook-endpoints create`);
    const env = { PAYD_API_KEY: printed.apiKey, PAYD_URL: base, PAYMENT_ID: paymentId };
    const out: Record<string, string> = {};
    for (const line of lines.filter((l) => !/events resend/.test(l))) { // resend: in the webhook test above
      const run = await bash(line, env);
      assert.equal(run.code, 0, `${line}\n${run.stderr}`);
      out[line.split(/ +/).slice(2, 4).join(' ')] = run.stdout;
    }
    assert.deepEqual(Object.keys(out), ['payments list', 'payments capture', 'events list'], where(cli));
    assert.match(out['payments list']!, new RegExp(`^${paymentId} .* 10000 EUR +AUTHORIZED +captured 6000 .* 1001$`, 'm'));
    assert.match(out['payments capture']!, /^idempotency key \S+ \(retry a lost answer with --idempotency-key \S+\)$/m);
    assert.match(out['payments capture']!, new RegExp(`^capture asked: payment ${paymentId} captured 7050 refunded 0 voided 0 EUR$`, 'm'));
    assert.equal(out['events list']!.match(/ payment\.captured$/gm)?.length, 2, out['events list']);
    // "also get, refund, void", with the options of `payd payments --help`.
    const got = await bash('node bin/payd.js payments get "$PAYMENT_ID"', env);
    assert.equal(JSON.parse(got.stdout).amounts.total_captured, 7050);
    const refund = await bash('node bin/payd.js payments refund "$PAYMENT_ID" --amount 1050', env);
    assert.match(refund.stdout, new RegExp(`^refund asked: payment ${paymentId} captured 7050 refunded 1050 voided 0 EUR$`, 'm'), refund.stderr);
    const voided = await bash('node bin/payd.js payments void "$PAYMENT_ID"', env);
    assert.match(voided.stdout, new RegExp(`^void asked: payment ${paymentId} captured 7050 refunded 1050 voided 2950 EUR$`, 'm'), voided.stderr);
    // An endpoint from the command line ("also list, ..., delete"), at the reader's own URL (this
    // machine's receiver, instead of the example's shop.example), removed at once: no event came in between.
    const receiverUrl = `http://127.0.0.1:${(receiver!.address() as AddressInfo).port}/payd-cli`;
    const created = await bash(set(endpointLine, 'https://shop.example/payd', receiverUrl, where(cli)), env);
    assert.equal(created.code, 0, created.stderr);
    const made = new RegExp(`^(\\S+) +enabled +payment\\.captured +${receiverUrl.replace(/[.]/g, '\\.')}$`, 'm').exec(created.stdout);
    assert.ok(made, created.stdout);
    assert.match(created.stdout, /^signing secret \(shown once\): whsec_\S+$/m);
    const listed = await bash('node bin/payd.js webhook-endpoints list', env);
    assert.equal(listed.stdout.trim().split('\n').length, 2, listed.stdout);
    const deleted = await bash(`node bin/payd.js webhook-endpoints delete ${made[1]}`, env);
    assert.equal(deleted.stdout.trim(), `deleted ${made[1]}`, deleted.stderr);
    // The new capture reached the webhook endpoint too.
    await waitFor(() => received.some((r) => r.verified && JSON.parse(r.body).data.operation?.amount === 1050), { timeout: 15_000, what: 'the delivery of the new capture' }).catch((e: Error) => assert.fail(`${e.message}: ${JSON.stringify(received)}`));
  });

  it('downloads the CSV export from the dashboard, signed in with what payd printed', async () => {
    assert.ok(paymentId, 'the First calls ran');
    const browser = new Browser();
    // The address payd printed sends to its sign-in page.
    const login = await browser.open(`${base}/dashboard`);
    assert.equal(login.status, 200, login.text);
    const form = /<form method="post" action="([^"]+)"[^]*?<\/form>/.exec(login.text);
    assert.ok(form, `a sign-in form: ${login.text}`);
    const fields = hiddenFields(form[0]);
    fields.set('email', printed.email);
    fields.set('password', printed.password);
    const home = await browser.open(new URL(unescapeHtml(form[1]!), login.url).toString(), { method: 'POST', form: fields });
    assert.equal(home.status, 200, home.text);
    assert.equal(new URL(home.url).pathname, `/dashboard/${printed.entityId}`);
    // Payments, in the navigation; then the link under the list.
    const payments = /<a [^>]*href="([^"]+)"[^>]*>Payments<\/a>/.exec(home.text);
    assert.ok(payments, 'a Payments link');
    const list = await browser.open(new URL(unescapeHtml(payments[1]!), home.url).toString());
    assert.equal(list.status, 200);
    assert.ok(list.text.includes(paymentId), 'the payment is listed');
    const link = /<a href="([^"]+)"[^>]*>Download these payments \(CSV\)<\/a>/.exec(list.text);
    assert.ok(link, 'the CSV link under the list');
    const csv = await browser.open(new URL(unescapeHtml(link[1]!), list.url).toString());
    assert.equal(csv.status, 200);
    assert.match(csv.headers.get('content-type') ?? '', /^text\/csv; charset=utf-8/);
    assert.match(csv.headers.get('content-disposition') ?? '', /attachment; filename="?payments-\d{4}-\d{2}-\d{2}\.csv/);
    const [header, ...rows] = parseCsv(csv.text);
    const row = rows.find((r) => r[0] === paymentId);
    assert.ok(row, csv.text);
    const cell = (name: string) => row[header!.indexOf(name)];
    assert.equal(cell('status'), 'AUTHORIZED');
    assert.equal(cell('order_reference'), '1001');
    assert.equal(cell('currency'), 'EUR');
    assert.equal(cell('amount'), '100.00');
    assert.equal(cell('captured'), '70.50'); // 60.00 (First calls) + 10.50 (payd payments capture)
    assert.equal(cell('captured_minor'), '7050');
    assert.equal(cell('refunded'), '10.50'); // payd payments refund
    assert.equal(cell('voided'), '29.50'); // payd payments void: the rest
    assert.equal(cell('card'), 'VISA 4242');
  });
});

describe('the README on PostgreSQL: "On PostgreSQL" and "Operator API" as written', () => {
  let db: PgDatabase;
  let dir: string;
  let payd: PaydProcess | undefined;

  before(async () => {
    db = await emptyPgDatabase(POSTGRES_URL, 'payd_walk_');
    dir = mkdtempSync(path.join(tmpdir(), 'payd-walk-pg-'));
  });
  after(async () => {
    if (payd) assert.equal(await payd.stop(), 0);
    await db.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('starts without a merchant, prints two calls that make one, and the Operator API calls make a merchant that pays', async () => {
    const start = sectionBlock('README.md', 'On PostgreSQL', 'sh');
    const [createdb, exportToken, npmStart, ...more] = start.code.trim().split('\n');
    assert.deepEqual(more, [], where(start));
    // createdb may be absent: the database is made with pg (CREATE DATABASE), as createdb would.
    assert.match(createdb!, /^createdb -h 127\.0\.0\.1 -U postgres payd /);
    const exported = await bash(`${exportToken}\nprintf %s "$PAYD_ADMIN_TOKEN"`);
    assert.equal(exported.code, 0, exported.stderr);
    const adminToken = exported.stdout;
    assert.match(adminToken, /^[0-9a-f]{48}$/);
    assert.match(npmStart!, /^DATABASE_URL=postgres:\/\/postgres@127\.0\.0\.1:5432\/payd npm start$/);
    const port = await freePort();
    const base = `http://localhost:${port}`;
    // payd's defaults but the data directory: its master key goes there instead of ./.payd in the checkout.
    payd = await startPayd({ PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: db.url, PAYD_ADMIN_TOKEN: adminToken, PAYD_DATA_DIR: dir }, { bare: true });
    await waitFor(() => payd!.output().includes('(README.md, "On PostgreSQL" and "Operator API")'), { timeout: 10_000, what: 'the "No merchant yet" hint' }).catch((e: Error) => assert.fail(`${e.message}:\n${payd!.output()}`));
    const out = payd.output();
    assert.match(out, /No merchant yet\. Create the first one and its API key with the operator token \(PAYD_ADMIN_TOKEN\):/);
    assert.doesNotMatch(out, /demo merchant/);
    // The two calls it prints run as printed: a merchant and its key.
    const hint = out.slice(out.indexOf('No merchant yet')).split('\n').slice(1, 3).map((l) => l.trim());
    assert.ok(hint[0]!.startsWith(`ENTITY=$(curl -s -X POST ${base}/admin/v1/entities `), out);
    const hinted = await bash(hint.join('\n'), { PAYD_ADMIN_TOKEN: adminToken });
    assert.equal(hinted.code, 0, hinted.stderr);
    assert.match(jsonValues(hinted.stdout)[0]?.api_key ?? '', /^payd_sk_/, `${hint.join('\n')}\n${hinted.stdout}${hinted.stderr}`);

    // The Operator API block up to the revocation, with the BASE of this port.
    const ops = sectionBlock('README.md', 'Operator API', 'sh');
    const [create, revoke] = set(ops.code, /^BASE=http:\/\/localhost:3000$/m, `BASE=${base}`, where(ops)).split(/^# Revoking.*\n/m);
    assert.ok(revoke, `${where(ops)}: the revocation comes last`);
    const made = await bash(`${create}\nprintf '\\n--walkthrough--\\n%s\\n' "$ENTITY"`, { PAYD_ADMIN_TOKEN: adminToken });
    assert.equal(made.code, 0, made.stderr);
    const [answers, kept] = made.stdout.split('\n--walkthrough--\n');
    const [key, ...rest] = jsonValues(answers!);
    assert.deepEqual(rest, []);
    assert.match(key?.api_key ?? '', /^payd_sk_/, made.stdout);
    const entity = (await (await fetch(`${base}/admin/v1/entities/${kept!.trim()}`, { headers: { authorization: `Bearer ${adminToken}` } })).json()) as { id: string; name: string };
    assert.equal(entity.name, 'Acme', 'ENTITY holds the new entity\'s id');

    // A dashboard user, with BASE and ENTITY as that block left them: no mail server, so the invitation URL is in the answer.
    const member = sectionBlock('README.md', 'On PostgreSQL', 'sh', 1);
    const invited = await bash(`BASE=${base}\nENTITY=${entity.id}\n${member.code}`, { PAYD_ADMIN_TOKEN: adminToken });
    assert.equal(invited.code, 0, invited.stderr);
    const [m] = jsonValues(invited.stdout);
    assert.equal(m?.role, 'admin', invited.stdout);
    assert.match(m.invitation_url ?? '', new RegExp(`^${base}/`));

    // The key pays: the First calls with it.
    const first = sectionBlock('README.md', 'First calls', 'sh');
    const calls = set(set(first.code, /^KEY=payd_sk_\.\.\. /m, `KEY=${key.api_key} `, where(first)), /^BASE=http:\/\/localhost:3000$/m, `BASE=${base}`, where(first));
    const paid = await bash(calls);
    assert.equal(paid.code, 0, paid.stderr);
    const [payment, captured] = jsonValues(paid.stdout);
    assert.equal(payment?.authorization?.status, 'AUTHORIZED', paid.stdout);
    assert.equal(captured?.captures?.[0]?.status, 'SUCCESS', paid.stdout);

    // The revocation, with KEY_ID the id the api-keys call answered: the key no longer gets a token.
    const revoked = await bash(`BASE=${base}\nADMIN="authorization: Bearer $PAYD_ADMIN_TOKEN"\nENTITY=${entity.id}\nKEY_ID=${key.id}\n${revoke}`, { PAYD_ADMIN_TOKEN: adminToken });
    assert.equal(revoked.code, 0, revoked.stderr);
    const refused = await fetch(`${base}/oauth/token`, { method: 'POST', headers: { 'x-api-key': key.api_key, 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=client_credentials' });
    assert.equal(refused.status, 401);
  });
});
