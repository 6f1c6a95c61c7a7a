// Passkeys (WebAuthn) as a second factor (docs/identity.md "Passkeys"), against the real
// app: a software authenticator built here from node:crypto (an ES256 key, attestation
// 'none', clientDataJSON and authenticatorData as a browser and an authenticator make
// them, a tiny CBOR encoder) registers on the security page and answers the second step.
// Refused: a replayed or expired challenge, one of another sign-in, a counter that does not
// advance, another user's credential, forms without the CSRF token. Recovery codes work
// without the passkey; removing the last passkey removes the factor and the codes.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { TestClock } from '../helpers/clock.ts';
import { FORM, PASSWORD, alertOf, authorizeRequest, cookieOf, createClient, createUser, hiddenFields } from './idp-helpers.ts';

const REDIRECT = 'https://shop.example/callback';
const ORIGIN = 'http://payd.test'; // createTestApp's PAYD_BASE_URL
const RP_ID = 'payd.test';

const b64u = (b: Buffer) => b.toString('base64url');
const sha = (b: Buffer | string) => createHash('sha256').update(b).digest();

// ---- a minimal CBOR encoder (major types 0, 1, 2, 3, 5: what a COSE key and an attestation object need) ----
const head = (major: number, n: number) => (n < 24 ? Buffer.from([(major << 5) | n]) : n < 256 ? Buffer.from([(major << 5) | 24, n])
  : Buffer.from([(major << 5) | 25, n >> 8, n & 0xff]));
const cbor = (v: number | string | Buffer | Map<number | string, unknown>): Buffer => {
  if (typeof v === 'number') return v >= 0 ? head(0, v) : head(1, -1 - v);
  if (typeof v === 'string') return Buffer.concat([head(3, Buffer.byteLength(v)), Buffer.from(v)]);
  if (Buffer.isBuffer(v)) return Buffer.concat([head(2, v.length), v]);
  return Buffer.concat([head(5, v.size), ...[...v].flatMap(([k, x]) => [cbor(k), cbor(x as never)])]);
};

/** A software authenticator: one ES256 credential, a signature counter it keeps (or is told). */
class SoftAuthenticator {
  readonly credentialId = randomBytes(32);
  private readonly key: KeyObject;
  private readonly cose: Buffer;
  counter = 0;
  constructor() {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    this.key = privateKey;
    const jwk = publicKey.export({ format: 'jwk' });
    this.cose = cbor(new Map<number, unknown>([[1, 2], [3, -7], [-1, 1], [-2, Buffer.from(jwk.x!, 'base64url')], [-3, Buffer.from(jwk.y!, 'base64url')]]));
  }
  get id() {
    return b64u(this.credentialId);
  }
  private clientData(type: string, challenge: string, origin: string) {
    return Buffer.from(JSON.stringify({ type, challenge, origin, crossOrigin: false }));
  }
  private count() {
    const c = Buffer.alloc(4);
    c.writeUInt32BE(this.counter);
    return c;
  }
  /** navigator.credentials.create()'s answer, as the page's script posts it. */
  register(challenge: string, { origin = ORIGIN, rpId = RP_ID } = {}) {
    const idLen = Buffer.from([this.credentialId.length >> 8, this.credentialId.length & 0xff]);
    const authData = Buffer.concat([sha(rpId), Buffer.from([0x45]) /* UP, UV, AT */, this.count(), Buffer.alloc(16) /* aaguid */, idLen, this.credentialId, this.cose]);
    const attestationObject = cbor(new Map<string, unknown>([['fmt', 'none'], ['attStmt', new Map()], ['authData', authData]]));
    return JSON.stringify({
      id: this.id, rawId: this.id, type: 'public-key', clientExtensionResults: {},
      response: { clientDataJSON: b64u(this.clientData('webauthn.create', challenge, origin)), attestationObject: b64u(attestationObject), transports: ['internal'] },
    });
  }
  /** navigator.credentials.get()'s answer: signs authenticatorData || SHA-256(clientDataJSON). */
  assert(challenge: string, { origin = ORIGIN, counter = this.counter + 1, as = this as SoftAuthenticator } = {}) {
    this.counter = counter;
    const authData = Buffer.concat([sha(RP_ID), Buffer.from([0x05]) /* UP, UV */, this.count()]);
    const clientDataJSON = this.clientData('webauthn.get', challenge, origin);
    const signature = sign('sha256', Buffer.concat([authData, sha(clientDataJSON)]), this.key);
    return JSON.stringify({
      id: as.id, rawId: as.id, type: 'public-key', clientExtensionResults: {},
      response: { clientDataJSON: b64u(clientDataJSON), authenticatorData: b64u(authData), signature: b64u(signature) },
    });
  }
}

const optionsOf = (html: string) => {
  const m = /data-payd-passkey-options>([^<]*)<\/script>/.exec(html);
  assert.ok(m, 'the page carries passkey options');
  return JSON.parse(m[1]!) as Record<string, unknown> & { challenge: string };
};

describe('identity provider: passkeys (WebAuthn second factor)', () => {
  let t: TestApp;
  const clock = new TestClock();
  let client: { client_id: string; client_secret: string };
  const email = 'pk@example.com';
  const other = 'pk-other@example.com';
  const device = new SoftAuthenticator();
  const otherDevice = new SoftAuthenticator();
  let account = { body: '', cookie: '' };
  let recovery: string[] = [];

  before(async () => {
    t = await createTestApp({}, { clock: clock.now });
    await createUser(t, email, { email_verified: true });
    await createUser(t, other, { email_verified: true });
    client = await createClient(t, { name: 'Shop', callback_urls: [REDIRECT], grant_types: ['authorization_code', 'password'] });
  });
  after(() => t?.close());

  const cookiesOf = (...parts: Array<string | undefined>) => parts.filter(Boolean).join('; ');
  /** Posts the fields with the page's CSRF token (and the authorization request's hidden fields when `request`). */
  const post = (page: { body: string; cookie: string }, url: string, fields: Record<string, string>, request = false) => {
    const hidden = hiddenFields(page.body);
    const form = new URLSearchParams();
    for (const [k, v] of hidden) if (k === 'csrf' || (request && !['credential', 'name', 'id', 'next'].includes(k))) form.set(k, v);
    for (const [k, v] of Object.entries(fields)) form.set(k, v);
    return t.app.inject({ method: 'POST', url, headers: { ...FORM, cookie: page.cookie }, payload: form.toString() });
  };

  /** A session on the security page (the account sign-in; a user without a factor yet). */
  async function securitySession(who: string) {
    const login = await t.app.inject({ url: '/oauth/account/security' });
    const csrf = cookieOf(login, 'payd_idp_csrf')!;
    const signed = await post({ body: login.body, cookie: csrf }, '/oauth/account/security/login', { email: who, password: PASSWORD });
    assert.equal(signed.statusCode, 303, signed.body);
    const cookie = cookiesOf(csrf, cookieOf(signed, 'payd_idp_session'));
    const page = await t.app.inject({ url: '/oauth/account/security', headers: { cookie } });
    return { body: page.body, cookie };
  }

  /** Password step of the hosted sign-in: the second step's page and its cookies. */
  async function passwordStep(who = email) {
    const a = authorizeRequest(client.client_id, REDIRECT);
    const page = await t.app.inject({ url: a.url });
    const csrf = cookieOf(page, 'payd_idp_csrf')!;
    const form = hiddenFields(page.body);
    form.set('email', who);
    form.set('password', PASSWORD);
    const res = await t.app.inject({ method: 'POST', url: '/oauth/authorize/login', headers: { ...FORM, cookie: csrf }, payload: form.toString() });
    assert.equal(res.statusCode, 200, res.body);
    return { res, a, page: { body: res.body, cookie: cookiesOf(csrf, cookieOf(res, 'payd_idp_mfa')) } };
  }
  const usePasskey = (page: { body: string; cookie: string }, credential: string) => post(page, '/oauth/authorize/mfa', { credential }, true);
  const lastEvent = async (who: string) => (await t.testDb.db.query<{ auth_type: string; second_factor: string | null }>(
    'SELECT e.auth_type, e.second_factor FROM idp_user_events e JOIN idp_users u ON u.id = e.user_id WHERE u.email = $1 ORDER BY e.date DESC LIMIT 1', [who])).rows[0];

  it('registers a passkey on the security page: CSRF token, the password again and a name, then the authenticator\'s answer', async () => {
    account = await securitySession(email);
    assert.match(account.body, /Passkeys: <strong>none<\/strong>/);
    const noCsrf = await t.app.inject({ method: 'POST', url: '/oauth/account/security/passkeys/start', headers: { ...FORM, cookie: account.cookie },
      payload: new URLSearchParams({ name: 'Laptop', password: PASSWORD }).toString() });
    assert.equal(noCsrf.statusCode, 403);
    const wrongPassword = await post(account, '/oauth/account/security/passkeys/start', { name: 'Laptop', password: 'not the password' });
    assert.equal(wrongPassword.statusCode, 400);
    assert.doesNotMatch(wrongPassword.body, /data-payd-passkey-options/);
    const noName = await post(account, '/oauth/account/security/passkeys/start', { name: '  ', password: PASSWORD });
    assert.equal(noName.statusCode, 400);
    assert.match(alertOf(noName.body)!, /^name: /);

    const started = await post(account, '/oauth/account/security/passkeys/start', { name: 'Laptop', password: PASSWORD });
    assert.equal(started.statusCode, 200, started.body);
    assert.match(started.body, /<script src="\/oauth\/passkey\.js" defer><\/script>/);
    const options = optionsOf(started.body) as { challenge: string; rp: { id: string }; attestation: string; authenticatorSelection: { userVerification: string } };
    assert.equal(options.rp.id, RP_ID);
    assert.equal(options.attestation, 'none');
    assert.equal(options.authenticatorSelection.userVerification, 'preferred');
    const challenges = await t.testDb.db.query<{ challenge_hash: string }>('SELECT challenge_hash FROM idp_passkey_challenges');
    assert.ok(challenges.rows.every((r) => r.challenge_hash !== options.challenge), 'challenges are stored hashed');

    // The finishing form without the CSRF token is refused, and does not use up the challenge.
    const finishNoCsrf = await t.app.inject({ method: 'POST', url: '/oauth/account/security/passkeys/finish', headers: { ...FORM, cookie: account.cookie },
      payload: new URLSearchParams({ name: 'Laptop', credential: device.register(options.challenge) }).toString() });
    assert.equal(finishNoCsrf.statusCode, 403);
    // An answer made for another origin is refused (and spends the challenge).
    const elsewhere = await post({ body: started.body, cookie: account.cookie }, '/oauth/account/security/passkeys/finish', { name: 'Laptop', credential: new SoftAuthenticator().register(options.challenge, { origin: 'http://evil.test' }) });
    assert.equal(elsewhere.statusCode, 400);
    assert.match(alertOf(elsewhere.body)!, /^credential: the passkey could not be verified/);
    const bad = await post({ body: started.body, cookie: account.cookie }, '/oauth/account/security/passkeys/finish', { name: 'Laptop', credential: 'not json' });
    assert.equal(bad.statusCode, 400);
    assert.match(alertOf(bad.body)!, /^credential: /);

    const again = await post(account, '/oauth/account/security/passkeys/start', { name: 'Laptop', password: PASSWORD });
    const challenge = optionsOf(again.body).challenge;
    const finished = await post({ body: again.body, cookie: account.cookie }, '/oauth/account/security/passkeys/finish', { name: 'Laptop', credential: device.register(challenge) });
    assert.equal(finished.statusCode, 200, finished.body);
    assert.match(finished.body, /The passkey Laptop is added/);
    recovery = [...finished.body.matchAll(/<li><code>([0-9a-f-]+)<\/code><\/li>/g)].map((m) => m[1]!);
    assert.equal(recovery.length, 10, 'the first factor comes with recovery codes, shown once');
    assert.match(finished.body, /Passkeys: <strong>1<\/strong>/);
    assert.match(finished.body, /class="passkey-name">Laptop</);
    const row = (await t.testDb.db.query<{ credential_id: string; counter: string; transports: string[]; name: string; last_used_at: Date | null; public_key: Uint8Array }>(
      'SELECT credential_id, counter::text, transports, name, last_used_at, public_key FROM idp_passkeys')).rows;
    assert.equal(row.length, 1);
    assert.equal(row[0]!.credential_id, device.id);
    assert.equal(row[0]!.counter, '0');
    assert.deepEqual(row[0]!.transports, ['internal']);
    assert.equal(row[0]!.last_used_at, null);
    assert.ok(row[0]!.public_key.length > 64);

    // The same answer again: its challenge is spent.
    const replay = await post({ body: again.body, cookie: account.cookie }, '/oauth/account/security/passkeys/finish', { name: 'Laptop 2', credential: new SoftAuthenticator().register(challenge) });
    assert.equal(replay.statusCode, 400);
    assert.match(alertOf(replay.body)!, /expired or used/);
    assert.equal((await t.testDb.db.query('SELECT 1 FROM idp_passkeys')).rows.length, 1);
  });

  it('offers "Use a passkey" at the second step and signs in with it; the login event says so', async () => {
    const { page, a } = await passwordStep();
    assert.match(page.body, />Use a passkey</);
    assert.match(page.body, /Code from your authenticator app, or a recovery code/);
    const options = optionsOf(page.body) as { challenge: string; rpId: string; userVerification: string; allowCredentials: Array<{ id: string }> };
    assert.equal(options.rpId, RP_ID);
    assert.equal(options.userVerification, 'preferred');
    assert.deepEqual(options.allowCredentials.map((c) => c.id), [device.id]);
    const res = await usePasskey(page, device.assert(options.challenge));
    assert.equal(res.statusCode, 303, res.body);
    assert.ok(cookieOf(res, 'payd_idp_session'));
    const location = new URL(res.headers.location as string);
    assert.equal(location.searchParams.get('state'), a.state);
    assert.ok(location.searchParams.get('code'));
    assert.deepEqual(await lastEvent(email), { auth_type: 'password', second_factor: 'passkey' });
    const row = (await t.testDb.db.query<{ counter: string; last_used_at: Date | null }>('SELECT counter::text, last_used_at FROM idp_passkeys')).rows[0]!;
    assert.equal(row.counter, '1');
    assert.ok(row.last_used_at);
  });

  it('refuses a replayed answer, an answer to another sign-in\'s challenge and an expired challenge', async () => {
    const first = await passwordStep();
    const answer = device.assert(optionsOf(first.page.body).challenge);
    const ok = await usePasskey(first.page, answer);
    assert.equal(ok.statusCode, 303);
    // The same answer on another sign-in: that sign-in's challenge is another one.
    const second = await passwordStep();
    const replayed = await usePasskey(second.page, answer);
    assert.equal(replayed.statusCode, 400);
    assert.equal(cookieOf(replayed, 'payd_idp_session'), undefined);
    assert.match(alertOf(replayed.body)!, /^credential: this passkey answer is not for this sign-in/);
    // Answering the second sign-in's challenge, posted with the first sign-in's (spent) cookie: bound to the attempt.
    const third = await passwordStep();
    const secondPending = /payd_idp_mfa=[^;]+/.exec(second.page.cookie)![0];
    const crossed = await usePasskey({ body: third.page.body, cookie: third.page.cookie.replace(/payd_idp_mfa=[^;]+/, secondPending) }, device.assert(optionsOf(third.page.body).challenge));
    assert.equal(crossed.statusCode, 400);
    assert.equal(cookieOf(crossed, 'payd_idp_session'), undefined);
    // Expired: the challenge lives 5 minutes by the app clock.
    const fourth = await passwordStep();
    clock.advance(301_000);
    const late = await usePasskey(fourth.page, device.assert(optionsOf(fourth.page.body).challenge));
    assert.equal(late.statusCode, 400);
    assert.match(alertOf(late.body)!, /expired or used/);
    // The refusal's page carries a new challenge, which works.
    const fresh = await usePasskey({ body: late.body, cookie: fourth.page.cookie }, device.assert(optionsOf(late.body).challenge));
    assert.equal(fresh.statusCode, 303, fresh.body);
  });

  it('refuses a signature counter that does not advance (a cloned authenticator)', async () => {
    const { page } = await passwordStep();
    const stored = Number((await t.testDb.db.query<{ counter: string }>('SELECT counter::text FROM idp_passkeys WHERE credential_id = $1', [device.id])).rows[0]!.counter);
    const cloned = await usePasskey(page, device.assert(optionsOf(page.body).challenge, { counter: stored }));
    assert.equal(cloned.statusCode, 400);
    assert.match(alertOf(cloned.body)!, /counter/);
    assert.equal(cookieOf(cloned, 'payd_idp_session'), undefined);
    const lower = await usePasskey({ body: cloned.body, cookie: page.cookie }, device.assert(optionsOf(cloned.body).challenge, { counter: stored - 1 }));
    assert.equal(lower.statusCode, 400);
    const ahead = await usePasskey({ body: lower.body, cookie: page.cookie }, device.assert(optionsOf(lower.body).challenge, { counter: stored + 10 }));
    assert.equal(ahead.statusCode, 303, ahead.body);
  });

  it('refuses another user\'s passkey', async () => {
    const otherAccount = await securitySession(other);
    const started = await post(otherAccount, '/oauth/account/security/passkeys/start', { name: 'Phone', password: PASSWORD });
    const added = await post({ body: started.body, cookie: otherAccount.cookie }, '/oauth/account/security/passkeys/finish', { name: 'Phone', credential: otherDevice.register(optionsOf(started.body).challenge) });
    assert.equal(added.statusCode, 200, added.body);
    // Signed by the other user's key, for this user's sign-in.
    const { page } = await passwordStep(email);
    const res = await usePasskey(page, otherDevice.assert(optionsOf(page.body).challenge));
    assert.equal(res.statusCode, 400);
    assert.match(alertOf(res.body)!, /not one of this account/);
    assert.equal(cookieOf(res, 'payd_idp_session'), undefined);
    // Nor can this user remove the other's passkey.
    const otherId = (await t.testDb.db.query<{ id: string }>('SELECT p.id FROM idp_passkeys p JOIN idp_users u ON u.id = p.user_id WHERE u.email = $1', [other])).rows[0]!.id;
    const removed = await post(account, '/oauth/account/security/passkeys/remove', { id: otherId, password: PASSWORD });
    assert.equal(removed.statusCode, 404);
    assert.equal((await t.testDb.db.query('SELECT 1 FROM idp_passkeys WHERE id = $1', [otherId])).rows.length, 1);
  });

  it('counts a wrong passkey answer as a wrong code, and refuses the password grant to a passkey user', async () => {
    const { page } = await passwordStep();
    const junk = await usePasskey(page, '{"id":"x"}');
    assert.equal(junk.statusCode, 400);
    assert.match(alertOf(junk.body)!, /^credential: /);
    const failures = await t.testDb.db.query<{ failures: number }>('SELECT failures FROM idp_mfa_pending ORDER BY expires_at DESC LIMIT 1');
    assert.equal(failures.rows[0]!.failures, 1);
    const grant = await t.app.inject({
      method: 'POST', url: '/oauth/token', headers: { ...FORM, authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}` },
      payload: new URLSearchParams({ grant_type: 'password', username: email, password: PASSWORD }).toString(),
    });
    assert.equal(grant.statusCode, 400);
    assert.equal(grant.json().error, 'invalid_grant');
  });

  it('signs in with a recovery code when the passkey is not at hand', async () => {
    const { page } = await passwordStep();
    const res = await post(page, '/oauth/authorize/mfa', { code: recovery[0]! }, true);
    assert.equal(res.statusCode, 303, res.body);
    assert.deepEqual(await lastEvent(email), { auth_type: 'password', second_factor: 'recovery' });
  });

  it('removes a passkey (CSRF token, the password again); the last one takes the recovery codes with it', async () => {
    const page = await t.app.inject({ url: '/oauth/account/security', headers: { cookie: account.cookie } });
    assert.match(page.body, /last used \d{4}-\d{2}-\d{2}/);
    const id = (await t.testDb.db.query<{ id: string }>('SELECT p.id FROM idp_passkeys p JOIN idp_users u ON u.id = p.user_id WHERE u.email = $1', [email])).rows[0]!.id;
    const noCsrf = await t.app.inject({ method: 'POST', url: '/oauth/account/security/passkeys/remove', headers: { ...FORM, cookie: account.cookie },
      payload: new URLSearchParams({ id, password: PASSWORD }).toString() });
    assert.equal(noCsrf.statusCode, 403);
    const wrong = await post({ body: page.body, cookie: account.cookie }, '/oauth/account/security/passkeys/remove', { id, password: 'nope' });
    assert.equal(wrong.statusCode, 400);
    const removed = await post({ body: page.body, cookie: account.cookie }, '/oauth/account/security/passkeys/remove', { id, password: PASSWORD });
    assert.equal(removed.statusCode, 200, removed.body);
    assert.match(removed.body, /The passkey is removed/);
    assert.match(removed.body, /Passkeys: <strong>none<\/strong>/);
    const codes = await t.testDb.db.query('SELECT 1 FROM idp_mfa_recovery_codes r JOIN idp_users u ON u.id = r.user_id WHERE u.email = $1', [email]);
    assert.equal(codes.rows.length, 0, 'no factor left: the recovery codes are gone too');
    // No factor: the password signs in again at once.
    const a = authorizeRequest(client.client_id, REDIRECT);
    const login = await t.app.inject({ url: a.url });
    const form = hiddenFields(login.body);
    form.set('email', email);
    form.set('password', PASSWORD);
    const res = await t.app.inject({ method: 'POST', url: '/oauth/authorize/login', headers: { ...FORM, cookie: cookieOf(login, 'payd_idp_csrf')! }, payload: form.toString() });
    assert.equal(res.statusCode, 303);
    assert.deepEqual(await lastEvent(email), { auth_type: 'password', second_factor: null });
  });
});
