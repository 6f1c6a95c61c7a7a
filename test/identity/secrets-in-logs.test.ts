// Secrets in the request log (issue 40 item 1): the log wrote `?token=…` of reset and
// invitation links (only `session` was redacted). Every credential-like query parameter
// (logger.ts SECRET_QUERY_PARAMS: token, code, tkn, access_token, …), matched by name
// without regard to case, is [redacted] in what payd's real logger writes; state is kept.
// The mails kept before are redacted by migration 0034.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { redactLinks, redactUrl } from '../../src/platform/observability/logger.ts';
import { ADMIN_TOKEN, MASTER_KEY, type TestApp } from '../helpers/app.ts';
import { createTestDb, type TestDb } from '../helpers/db.ts';
import { PASSWORD, authorizeRequest, createClient, createUser, signIn } from './idp-helpers.ts';

describe('identity: no credential in the request log', () => {
  let testDb: TestDb;
  let t: TestApp;
  const lines: string[] = [];

  before(async () => {
    testDb = await createTestDb();
    const config = loadConfig({ PAYD_ADMIN_TOKEN: ADMIN_TOKEN, PAYD_BASE_URL: 'http://payd.test', LOG_LEVEL: 'info' }, {});
    const app = await buildApp({ config, db: testDb.db, masterKey: MASTER_KEY, logStream: { write: (line) => { lines.push(line); } } });
    await app.ready();
    t = { app, testDb, config, adminHeaders: { authorization: `Bearer ${ADMIN_TOKEN}` } } as TestApp;
  });
  after(async () => {
    await t?.app.close();
    await testDb?.close();
  });

  it('redacts token, code, tkn and the other credential parameters of every logged URL, whatever their case; keeps state', async () => {
    const secrets = ['reset-secret-0001', 'code-secret-0002', 'tkn-secret-0003', 'access-secret-0004', 'upper-secret-0005', 'secret-secret-0006', 'pw-secret-0007', 'refresh-secret-0008'];
    const urls = [
      `/identity/v1/password/reset?token=${secrets[0]}`,
      `/oauth/authorize?client_id=nobody&code=${secrets[1]}&state=visible-state`,
      `/oauth/authorize?client_id=nobody&tkn=${secrets[2]}`,
      `/userinfo?Access_Token=${secrets[3]}`,
      `/identity/v1/password/reset?TOKEN=${secrets[4]}&x=1`,
      `/oauth/token?client_secret=${secrets[5]}&password=${secrets[6]}&refresh_token=${secrets[7]}`,
    ];
    for (const url of urls) await t.app.inject({ url });
    const log = lines.join('');
    assert.match(log, /"url":"\/identity\/v1\/password\/reset\?token=\[redacted\]"/);
    assert.match(log, /"url":"\/identity\/v1\/password\/reset\?TOKEN=\[redacted\]&x=1"/);
    assert.match(log, /state=visible-state/, 'state is not a credential: kept');
    for (const s of secrets) assert.doesNotMatch(log, new RegExp(s), `${s} is not in the log`);
  });

  it('a code flow leaves neither the code nor the session in the log', async () => {
    const cb = 'https://rp.example/callback';
    await createUser(t, 'logged@example.com');
    const client = await createClient(t, { name: 'Shop', callback_urls: [cb] });
    const res = await signIn(t.app, authorizeRequest(client.client_id, cb).url, { email: 'logged@example.com', password: PASSWORD });
    assert.equal(res.statusCode, 303, res.body);
    const code = new URL(String(res.headers.location)).searchParams.get('code')!;
    // The browser then comes back to payd with the code in a URL (a relying party on payd's host would).
    await t.app.inject({ url: `/oauth/authorize?client_id=${client.client_id}&code=${code}` });
    assert.doesNotMatch(lines.join(''), new RegExp(code));
  });

  it('migration 0034 redacts the links of the mails the outbox kept before', async () => {
    await testDb.db.query(`INSERT INTO idp_mail_outbox (id, to_address, subject, body, transport) VALUES
      ('00000000-0000-4000-8000-000000000034', 'old@example.com', 'You are invited', 'Choose your password:
https://payd.test/identity/v1/password/reset?token=old-invite-secret-123
then sign in.', 'outbox')`);
    const sql = readFileSync('migrations/0034_identity_signup_requests.sql', 'utf8');
    await testDb.db.query(/UPDATE idp_mail_outbox[\s\S]*?;/.exec(sql)![0]);
    const { rows: [mail] } = await testDb.db.query<{ body: string }>(`SELECT body FROM idp_mail_outbox WHERE to_address = 'old@example.com'`);
    assert.equal(mail!.body, 'Choose your password:\nhttps://payd.test/identity/v1/password/reset?token=[redacted]\nthen sign in.');
  });

  it('redactUrl: query and fragment, percent-encoded names; redactLinks: every link of a text', () => {
    assert.equal(redactUrl('/cb?code=abc&state=s#access_token=xyz&token_type=Bearer'), '/cb?code=[redacted]&state=s#access_token=[redacted]&token_type=Bearer');
    assert.equal(redactUrl('/x?t%6Fken=abc'), '/x?t%6Fken=[redacted]');
    assert.equal(redactUrl('/v2/payments?limit=2'), '/v2/payments?limit=2');
    assert.equal(redactLinks('Open this:\nhttps://payd.test/identity/v1/password/reset?token=abc\nthen sign in.'),
      'Open this:\nhttps://payd.test/identity/v1/password/reset?token=[redacted]\nthen sign in.');
  });
});
