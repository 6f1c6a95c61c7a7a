// Key rotation from the command line (issue 14, item 9): "`payd keys rotate access-token`,
// documented in three places, exits 2 with the usage; identity signing keys (RS256
// id_tokens) cannot be rotated". Every documented name works; after a rotation the new
// key signs, and the old one still verifies what it signed (tokens issued before, the
// identity provider's JWKS keeps the old public key).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { decodeProtectedHeader } from 'jose';
import { ADMIN_TOKEN } from '../helpers/app.ts';
import { freePort, SERVER_MASTER_KEY, startPayd } from '../helpers/processes.ts';
import { createPgTestDb } from '../faults/db-fixture.ts';

const run = promisify(execFile);

describe('payd keys rotate', () => {
  let env: Record<string, string>;
  let cleanup: () => Promise<void> = async () => {};
  before(async () => {
    if (process.env.DATABASE_URL) {
      const db = await createPgTestDb();
      env = { DATABASE_URL: db.url };
      cleanup = () => db.close();
    } else {
      const dir = mkdtempSync(path.join(tmpdir(), 'payd-keys-'));
      env = { PAYD_DATA_DIR: dir };
      cleanup = async () => rmSync(dir, { recursive: true, force: true });
    }
    env.PAYD_MASTER_KEY = SERVER_MASTER_KEY;
    env.PORT = String(await freePort()); // the same issuer across restarts
  });
  after(() => cleanup());

  const payd = (args: string[]) => run(process.execPath, ['bin/payd.js', ...args], { env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn', ...env } });

  it('on the embedded database, refuses while payd runs on it (one line, exit 2: the rotation would be lost), and the operator API rotates instead', async () => {
    if (process.env.DATABASE_URL) return; // (PostgreSQL: many processes share it; the CLI rotates while payd runs, as below)
    const server = await startPayd(env);
    try {
      const refused = await payd(['keys', 'rotate', 'redirection']).then(() => assert.fail('exit 0'), (e: { code: number; stderr: string }) => e);
      assert.equal(refused.code, 2);
      assert.match(refused.stderr, /^payd: the embedded database in \S+ is in use by another payd process \(pid \d+\); stop it first, or do this through the running server/);
      assert.equal(refused.stderr.trim().split('\n').length, 1, 'one line');
      const rotated = await fetch(`${server.base}/admin/v1/signing-keys/rotate`, {
        method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, body: '{"purpose":"redirection"}',
      });
      assert.equal(rotated.status, 200, await rotated.clone().text());
    } finally {
      assert.equal(await server.stop(), 0);
    }
    // Stopped, the directory is free again.
    const { stdout } = await payd(['keys', 'rotate', 'redirection']);
    assert.match(stdout, /^rotated /);
  });

  it('rotates every documented key; old tokens and old public keys keep verifying', async () => {
    let server = await startPayd(env);
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const entity = await (await fetch(`${server.base}/admin/v1/entities`, { method: 'POST', headers: { ...admin, 'content-type': 'application/json' }, body: '{"name":"Keys shop"}' })).json();
    const apiKey = (await (await fetch(`${server.base}/admin/v1/entities/${entity.id}/api-keys`, { method: 'POST', headers: admin })).json()).api_key;
    const token = async () => (await (await fetch(`${server.base}/oauth/token`, {
      method: 'POST', headers: { 'x-api-key': apiKey, 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=client_credentials',
    })).json()).access_token as string;
    const oldToken = await token();
    const kids = async () => ((await (await fetch(`${server.base}/.well-known/jwks.json`)).json()).keys as Array<{ kid: string }>).map((k) => k.kid);
    const idKidsBefore = await kids();
    assert.ok(idKidsBefore.length >= 1);
    assert.equal(await server.stop(), 0);

    for (const name of ['access-token', 'redirection', 'identity', 'identity-access-token']) {
      const { stdout } = await payd(['keys', 'rotate', name]);
      assert.match(stdout, /^rotated [a-z0-9-]+: new kid \S+/, name);
    }
    const refused = await payd(['keys', 'rotate', 'access']).then(() => assert.fail('exit 0'), (e: { code: number; stderr: string }) => e);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /unknown key "access"; one of access-token, redirection, identity/);

    server = await startPayd(env);
    try {
      // The payment API token issued before the rotation still works; new ones carry the new kid.
      const ok = await fetch(`${server.base}/v2/events`, { headers: { authorization: `Bearer ${oldToken}` } });
      assert.equal(ok.status, 200);
      const newToken = await token();
      assert.notEqual(decodeProtectedHeader(newToken).kid, decodeProtectedHeader(oldToken).kid);
      // The identity provider publishes the new key and keeps the old one.
      const idKidsAfter = await kids();
      for (const kid of idKidsBefore) assert.ok(idKidsAfter.includes(kid), `old kid ${kid} still published`);
      assert.ok(idKidsAfter.length > idKidsBefore.length, 'the new key is published');
    } finally {
      assert.equal(await server.stop(), 0);
    }
  });
});
