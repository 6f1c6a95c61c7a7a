// The least-privilege runtime role of docs/operations.md. On every database: the documented
// DELETE grants are exactly the tables the sources delete from, and nothing at run time
// truncates or changes the schema. On PostgreSQL: the documented GRANT block, run on a real
// database for a new role, is enough for `payd start --no-migrate` as that role to serve a
// payment, its capture and its webhook, an API key revocation, a sign-in with a code
// exchange and a sign-out; and the role cannot change the schema or delete payments.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { createTestDb, type TestDb } from '../helpers/db.ts';
import { ADMIN_TOKEN } from '../helpers/app.ts';
import { call, onboard, type PaydProcess, runPayd, startPayd } from '../helpers/processes.ts';
import { startReceiver, waitFor } from '../webhooks/helpers.ts';
import { hiddenFields, PASSWORD } from '../identity/idp-helpers.ts';

const DOC = readFileSync('docs/operations.md', 'utf8');

/** The SQL block of docs/operations.md that starts with "-- payd runtime role grants". */
function documentedGrants(): string {
  const m = /```sql\n(-- payd runtime role grants\n[^]*?)```/.exec(DOC);
  assert.ok(m, 'docs/operations.md has the runtime role grants block');
  return m[1]!;
}

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    return statSync(p).isDirectory() ? sources(p) : p.endsWith('.ts') ? [p] : [];
  });
}

describe('the runtime role grants', () => {
  it('grant DELETE on exactly the tables the sources delete from; nothing truncates or runs DDL at run time', () => {
    const deleted = new Set<string>();
    for (const file of sources('src')) {
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/\bDELETE\s+FROM\s+([a-z_]+)/gi)) deleted.add(m[1]!);
      assert.doesNotMatch(text, /\bTRUNCATE\b/i, `${file} truncates`);
      if (file !== path.join('src', 'platform', 'db', 'migrator.ts')) {
        assert.doesNotMatch(text, /['"`]\s*(CREATE|ALTER|DROP)\s+(TABLE|INDEX|SCHEMA|SEQUENCE|TYPE|FUNCTION|VIEW)\b/i, `${file} runs DDL`);
      }
    }
    const granted = /GRANT DELETE ON ([a-z_, ]+) TO payd_app;/.exec(documentedGrants());
    assert.ok(granted);
    assert.deepEqual(granted[1]!.split(',').map((t) => t.trim()).sort(), [...deleted].sort());
  });

  if (process.env.DATABASE_URL) {
    describe('on PostgreSQL, payd start --no-migrate as a role with exactly these grants', () => {
      let testDb: TestDb;
      let role: string;
      let roleUrl: string;
      let server: PaydProcess | undefined;
      let base: string;

      before(async () => {
        testDb = await createTestDb(); // migrated by its owner (the server's superuser)
        role = `payd_rt_${randomBytes(5).toString('hex')}`;
        const password = randomBytes(12).toString('hex');
        const dbName = new URL(testDb.url!).pathname.slice(1);
        const owner = new pg.Client({ connectionString: testDb.url });
        await owner.connect();
        try {
          await owner.query(`CREATE ROLE ${role} LOGIN PASSWORD '${password}'`);
          // PostgreSQL 15 and later already deny CREATE on public to other roles; older ones do not.
          await owner.query('REVOKE CREATE ON SCHEMA public FROM PUBLIC');
          const grants = documentedGrants().replace(/\bDATABASE payd\b/g, `DATABASE ${dbName}`).replace(/\bpayd_app\b/g, role);
          await owner.query(grants);
        } finally {
          await owner.end();
        }
        const u = new URL(testDb.url!);
        u.username = role;
        u.password = password;
        roleUrl = u.toString();
      });

      after(async () => {
        await server?.stop('SIGKILL');
        await testDb.close(); // drops the database, and with it the role's privileges
        const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
        await admin.connect();
        await admin.query(`DROP ROLE IF EXISTS ${role}`);
        await admin.end();
      });

      it('the role cannot change the schema, delete payments or record migrations', async () => {
        const c = new pg.Client({ connectionString: roleUrl });
        await c.connect();
        try {
          for (const sql of [
            'CREATE TABLE payd_intruder (id int)',
            'DELETE FROM payments',
            'TRUNCATE entities',
            "INSERT INTO schema_migrations (version, name, checksum) VALUES (9999, 'x', 'x')",
            'ALTER TABLE payments ADD COLUMN x int',
          ]) {
            await assert.rejects(c.query(sql), (err: { code?: string }) => err.code === '42501', sql);
          }
          await c.query('SELECT count(*) FROM schema_migrations'); // it can read what --no-migrate checks
        } finally {
          await c.end();
        }
      });

      it('serves payments, captures, webhooks, API keys and sign-ins, without a single error logged', async () => {
        server = await startPayd({
          DATABASE_URL: roleUrl, LOG_LEVEL: 'info',
          PAYD_WEBHOOK_POLL_MS: '50', PAYD_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', PAYD_RECOVERY_INTERVAL_MS: '200',
          PAYD_RECOVERY_GRACE_SECONDS: '1', PAYD_PARTNER_TIMEOUT_MS: '500',
        }, { args: ['start', '--no-migrate'], readyWithinMs: 60_000 });
        base = server.base;

        const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
        const rx = await startReceiver();
        try {
          // A merchant, its webhook endpoint, a payment and its capture, the webhooks.
          const m = await onboard(base);
          const put = await call(base, 'PUT', `/admin/v1/entities/${m.entityId}/webhook-endpoint`, admin, { url: `${rx.url}/grants` });
          assert.equal(put.status, 200, JSON.stringify(put.body));
          const pay = await call(base, 'POST', '/v2/payments', { ...m.auth, 'x-idempotency-key': 'grants-pay' }, {
            amount: 10000, currency: 'EUR', capture_mode: 'MANUAL', order: { reference: 'grants-1' },
            split: [{ partner: 'card-sim', method: 'CARD', amount: 10000,
              instrument: { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2030', cvv: '123' } }],
          });
          assert.ok(pay.status === 200 || pay.status === 201, JSON.stringify(pay.body));
          assert.equal(pay.body!.authorization.status, 'AUTHORIZED');
          const id = pay.body!.id as string;
          const cap = await call(base, 'POST', `/v2/payments/${id}/captures`, { ...m.auth, 'x-idempotency-key': 'grants-cap' }, { amount: 6000 });
          assert.ok(cap.status === 201 || cap.status === 200 || cap.status === 202, JSON.stringify(cap.body));
          const got = await call(base, 'GET', `/v2/payments/${id}`, m.auth);
          assert.equal(got.status, 200);
          // Both webhooks arrive; deliveries run concurrently and may arrive out of order
          // (docs/webhooks.md), so each is waited for (CI once saw captured before authorized).
          for (const type of ['payment.authorized', 'payment.captured']) {
            await waitFor(() => rx.requests.some((r) => JSON.parse(r.body).type === type), 20_000, `the ${type} webhook`);
          }
          // DELETE on webhook_endpoints.
          const del = await call(base, 'DELETE', `/admin/v1/entities/${m.entityId}/webhook-endpoint`, admin);
          assert.ok(del.status === 204 || del.status === 200, JSON.stringify(del.body));

          // An API key revoked (UPDATE and NOTIFY) no longer gets a token.
          const key = await call(base, 'POST', `/admin/v1/entities/${m.entityId}/api-keys`, admin);
          assert.equal(key.status, 201);
          const revoke = await call(base, 'DELETE', `/admin/v1/entities/${m.entityId}/api-keys/${key.body!.id}`, admin);
          assert.ok(revoke.status === 204 || revoke.status === 200, JSON.stringify(revoke.body));
          const refused = await fetch(`${base}/oauth/token`, {
            method: 'POST', headers: { 'x-api-key': key.body!.api_key, 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=client_credentials',
          });
          assert.equal(refused.status, 401);

          // Identity: a user and an application, a failed then a good sign-in, the code
          // exchanged for tokens, then a sign-out (DELETE on the attempts and the session).
          const redirect = 'https://rp.example/callback';
          const appRes = await call(base, 'POST', '/admin/v1/identity/applications', admin, { name: 'Grants', callback_urls: [redirect] });
          assert.equal(appRes.status, 201, JSON.stringify(appRes.body));
          const client = appRes.body as { client_id: string; client_secret: string };
          const user = await call(base, 'POST', '/admin/v1/identity/users', admin, { email: 'grants@example.com', password: PASSWORD, given_name: 'G', family_name: 'R' });
          assert.equal(user.status, 201, JSON.stringify(user.body));
          const verifier = randomBytes(32).toString('base64url');
          const authorize = `${base}/oauth/authorize?${new URLSearchParams({
            response_type: 'code', client_id: client.client_id, redirect_uri: redirect, scope: 'openid profile email', state: 's1', nonce: 'n1',
            code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256',
          })}`;
          const signIn = async (password: string) => {
            const page = await fetch(authorize);
            assert.equal(page.status, 200);
            const csrf = page.headers.getSetCookie().find((c) => c.startsWith('payd_idp_csrf='))!.split(';')[0]!;
            const form = hiddenFields(await page.text());
            form.set('email', 'grants@example.com');
            form.set('password', password);
            return fetch(`${base}/oauth/authorize/login`, {
              method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: csrf }, body: form.toString(),
            });
          };
          const wrong = await signIn('not the password');
          assert.equal(wrong.status, 200, 'the form again, with an error');
          const good = await signIn(PASSWORD);
          assert.equal(good.status, 303);
          const code = new URL(good.headers.get('location')!).searchParams.get('code')!;
          assert.ok(code);
          const session = good.headers.getSetCookie().find((c) => c.startsWith('payd_idp_session='))!.split(';')[0]!;
          const tokens = await fetch(`${base}/oauth/token`, {
            method: 'POST',
            headers: {
              'content-type': 'application/x-www-form-urlencoded',
              authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`,
            },
            body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirect, code_verifier: verifier }).toString(),
          });
          const tokenBody = await tokens.json() as Record<string, unknown>;
          assert.equal(tokens.status, 200, JSON.stringify(tokenBody));
          assert.ok(tokenBody.id_token && tokenBody.access_token);
          // With the id_token as hint (without it, a signed-in browser is only asked to confirm).
          const out = await fetch(`${base}/oauth/logout?${new URLSearchParams({ id_token_hint: String(tokenBody.id_token) })}`, { headers: { cookie: session }, redirect: 'manual' });
          assert.equal(out.status, 200);
        } finally {
          await rx.close();
        }

        const code = await server!.stop('SIGTERM');
        const logs = server!.output();
        assert.equal(code, 0, logs);
        assert.doesNotMatch(logs, /"level":(50|60)/, 'no error logged');
        assert.doesNotMatch(logs, /permission denied/i);
        // The sign-out and the good sign-in deleted their rows (a good sign-in forgets that
        // address's failures for the account: src/identity/idp/throttle.ts).
        const owner = testDb.db;
        const { rows } = await owner.query<{ sessions: number; attempts: number }>(
          'SELECT (SELECT count(*)::int FROM idp_login_sessions) AS sessions, (SELECT count(*)::int FROM idp_login_failures) AS attempts');
        assert.deepEqual(rows[0], { sessions: 0, attempts: 0 }, 'the session and the failed attempt are gone');
      });

      it('payd migrate as the role, on a current schema, changes nothing and succeeds', async () => {
        const migrate = await runPayd(['migrate'], { DATABASE_URL: roleUrl });
        const run = { code: migrate.code, out: migrate.stdout + migrate.stderr };
        assert.equal(run.code, 0, run.out);
        assert.match(run.out, /migrations are up to date/);
      });
    });
  }
});
