// Social login (issue 14): payd federates to an upstream OpenID Connect provider, here a
// second payd on another local port, over real HTTP. A browser's journey, cookie by
// cookie: the sign-in page's "Continue with Upstream", the upstream's own sign-in, the
// callback, and the relying party's code, exchanged for the user's tokens. Checked: a new
// user is created and linked; a local user with the same verified email is linked, not
// duplicated; an unverified upstream email never takes an existing account; a callback
// in another browser (state not its own) or replayed is refused; an upstream whose
// metadata names another issuer is refused; secrets are never returned.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { type Server, createServer } from 'node:http';
import { SignJWT } from 'jose';
import * as OTPAuth from 'otpauth';
import { MASTER_KEY, createTestApp, type TestApp } from '../helpers/app.ts';
import { Mfa } from '../../src/identity/mfa/mfa.ts';
import { freePort } from '../helpers/processes.ts';
import { PASSWORD, hiddenFields } from './idp-helpers.ts';

/** A browser: one cookie jar per origin, redirects followed by hand. */
class Browser {
  private jars = new Map<string, Map<string, string>>();
  jar(url: string) {
    const origin = new URL(url).origin;
    if (!this.jars.has(origin)) this.jars.set(origin, new Map());
    return this.jars.get(origin)!;
  }
  async go(url: string, init: { method?: string; form?: Record<string, string> } = {}): Promise<{ url: string; status: number; body: string; location?: string }> {
    const jar = this.jar(url);
    const res = await fetch(url, {
      method: init.method ?? 'GET', redirect: 'manual',
      headers: { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; '), ...(init.form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
      ...(init.form ? { body: new URLSearchParams(init.form).toString() } : {}),
    });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const [k, ...v] = pair!.split('=');
      if (/Max-Age=0/i.test(c)) jar.delete(k!);
      else jar.set(k!, v.join('='));
    }
    const location = res.headers.get('location') ?? undefined;
    return { url, status: res.status, body: await res.text(), ...(location ? { location: new URL(location, url).toString() } : {}) };
  }
  /** Follows redirects until a page (or a URL outside the two servers). */
  async follow(url: string, stopAt: (u: string) => boolean): Promise<{ url: string; status: number; body: string }> {
    let r = await this.go(url);
    for (let i = 0; i < 10 && r.location; i++) {
      if (stopAt(r.location)) return { url: r.location, status: r.status, body: '' };
      r = await this.go(r.location);
    }
    return r;
  }
}

describe('social login: federation to an upstream OpenID Connect provider', () => {
  let up: TestApp;
  let down: TestApp;
  let upBase: string;
  let downBase: string;
  let rp: { client_id: string; client_secret: string };
  const RP_CALLBACK = 'http://localhost:9/rp/callback';

  before(async () => {
    const [upPort, downPort] = [await freePort(), await freePort()];
    upBase = `http://localhost:${upPort}`;
    downBase = `http://localhost:${downPort}`;
    up = await createTestApp({ baseUrl: upBase });
    await up.app.listen({ port: upPort, host: '127.0.0.1' });
    down = await createTestApp({ baseUrl: downBase });
    await down.app.listen({ port: downPort, host: '127.0.0.1' });
    const op = async (t: TestApp, url: string, payload: object, status = 201) => {
      const res = await t.app.inject({ method: 'POST', url, headers: t.adminHeaders, payload });
      assert.equal(res.statusCode, status, res.body);
      return res.json();
    };
    // Upstream: its users and the application payd signs in through (RS256 id_tokens).
    await op(up, '/admin/v1/identity/users', { email: 'uma@example.com', password: PASSWORD, given_name: 'Uma', family_name: 'Upstream', email_verified: true });
    await op(up, '/admin/v1/identity/users', { email: 'lena@example.com', password: PASSWORD, email_verified: true });
    await op(up, '/admin/v1/identity/users', { email: 'mallory-claims@example.com', password: PASSWORD, email_verified: false });
    const upstreamApp = await op(up, '/admin/v1/identity/applications', {
      name: 'payd downstream', callback_urls: [`${downBase}/oauth/federation/callback`], id_token_signed_response_alg: 'RS256',
    });
    // Downstream: the upstream provider, a relying party, and local users.
    const provider = await op(down, '/admin/v1/identity/providers', { id: 'upstream', name: 'Upstream', issuer: upBase, client_id: upstreamApp.client_id, client_secret: upstreamApp.client_secret });
    assert.equal(provider.client_secret, undefined, 'the secret is never shown');
    await op(down, '/admin/v1/identity/providers', { id: 'misnamed', name: 'Misnamed', issuer: upBase.replace('localhost', '127.0.0.1'), client_id: 'x', client_secret: 'y' });
    rp = await op(down, '/admin/v1/identity/applications', { name: 'Shop', callback_urls: [RP_CALLBACK] });
    await op(down, '/admin/v1/identity/users', { email: 'lena@example.com', password: PASSWORD, given_name: 'Lena' });
    await op(down, '/admin/v1/identity/users', { email: 'mallory-claims@example.com', password: PASSWORD });
  });
  after(async () => {
    await down?.close();
    await up?.close();
  });

  const authorizeUrl = () => {
    const verifier = randomBytes(32).toString('base64url');
    const q = new URLSearchParams({
      response_type: 'code', client_id: rp.client_id, redirect_uri: RP_CALLBACK, scope: 'openid profile email', state: 'rp-state', nonce: 'rp-nonce',
      code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256',
    });
    return { url: `${downBase}/oauth/authorize?${q}`, verifier };
  };

  /** The journey up to the upstream's sign-in form being posted; returns where the upstream sends the browser. */
  async function viaUpstream(b: Browser, email: string, provider = 'upstream') {
    const a = authorizeUrl();
    const page = await b.go(a.url);
    assert.equal(page.status, 200);
    const button = new RegExp(`href="(/oauth/federation/${provider}/start\\?[^"]+)"`).exec(page.body);
    assert.ok(button, 'the sign-in page offers the provider');
    const start = await b.go(`${downBase}${button[1]!.replace(/&amp;/g, '&')}`);
    if (start.status !== 303) return { start, a };
    assert.ok(start.location!.startsWith(`${upBase}/oauth/authorize?`));
    const upForm = await b.go(start.location!);
    assert.equal(upForm.status, 200, upForm.body);
    const fields = Object.fromEntries(hiddenFields(upForm.body));
    const signedUp = await b.go(`${upBase}/oauth/authorize/login`, { method: 'POST', form: { ...fields, email, password: PASSWORD } });
    assert.equal(signedUp.status, 303, signedUp.body);
    assert.ok(signedUp.location!.startsWith(`${downBase}/oauth/federation/callback?`));
    return { callback: signedUp.location!, a };
  }

  async function tokensFor(b: Browser, callback: string, verifier: string) {
    const done = await b.go(callback);
    assert.equal(done.status, 303, done.body);
    assert.ok(done.location!.startsWith(RP_CALLBACK), done.location);
    const code = new URL(done.location!).searchParams.get('code')!;
    const res = await down.app.inject({
      method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${rp.client_id}:${rp.client_secret}`).toString('base64')}` },
      payload: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: RP_CALLBACK, code_verifier: verifier }).toString(),
    });
    assert.equal(res.statusCode, 200, res.body);
    return JSON.parse(Buffer.from(res.json().id_token.split('.')[1], 'base64url').toString()) as Record<string, unknown>;
  }
  const users = async (email: string) => (await down.testDb.db.query<{ id: string }>('SELECT id::text FROM idp_users WHERE lower(email) = lower($1)', [email])).rows;

  it('a new user: created from the upstream\'s verified claims and linked; the relying party gets tokens for them; the next time the link is used', async () => {
    const b = new Browser();
    const { callback, a } = await viaUpstream(b, 'uma@example.com');
    const claims = await tokensFor(b, callback!, a.verifier);
    assert.equal(claims.email, 'uma@example.com');
    assert.equal(claims.given_name, 'Uma');
    const created = await users('uma@example.com');
    assert.equal(created.length, 1);
    const event = await down.testDb.db.query<{ auth_type: string }>('SELECT auth_type FROM idp_user_events WHERE user_id = $1 ORDER BY date DESC LIMIT 1', [created[0]!.id]);
    assert.equal(event.rows[0]!.auth_type, 'social');
    // Again, in a fresh browser: the same local user, through the link.
    const again = new Browser();
    const second = await viaUpstream(again, 'uma@example.com');
    assert.equal((await tokensFor(again, second.callback!, second.a.verifier)).sub, claims.sub);
    assert.equal((await users('uma@example.com')).length, 1);
  });

  it('an existing local account with the same verified email is linked, not duplicated', async () => {
    const before = await users('lena@example.com');
    const b = new Browser();
    const { callback, a } = await viaUpstream(b, 'lena@example.com');
    const claims = await tokensFor(b, callback!, a.verifier);
    assert.equal(claims.sub, before[0]!.id);
    assert.equal((await users('lena@example.com')).length, 1);
  });

  it('an unverified upstream email never takes over an existing account: an error page, no session, no link', async () => {
    const b = new Browser();
    const { callback } = await viaUpstream(b, 'mallory-claims@example.com');
    const done = await b.go(callback!);
    assert.equal(done.status, 400);
    assert.match(done.body, /has not verified that address/);
    assert.equal(done.body.includes('payd_idp_session'), false);
    const links = await down.testDb.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM idp_federated_identities f JOIN idp_users u ON u.id = f.user_id WHERE u.email = 'mallory-claims@example.com'`);
    assert.equal(links.rows[0]!.n, 0);
  });

  it('a callback in another browser (login CSRF) or replayed is refused; so is an upstream whose metadata names another issuer', async () => {
    const victim = new Browser();
    const attacker = new Browser();
    const { callback } = await viaUpstream(attacker, 'uma@example.com');
    const swapped = await victim.go(callback!);
    assert.equal(swapped.status, 400, 'the state is not this browser\'s');
    assert.match(swapped.body, /did not start in this browser/);
    const b = new Browser();
    const own = await viaUpstream(b, 'uma@example.com');
    await tokensFor(b, own.callback!, own.a.verifier);
    const replay = await b.go(own.callback!);
    assert.equal(replay.status, 400, 'a callback works once');

    const c = new Browser();
    const misnamed = await viaUpstream(c, 'uma@example.com', 'misnamed');
    assert.equal(misnamed.start!.status, 400);
    assert.match(misnamed.start!.body, /names another issuer/);
  });

  it('the operator API lists providers without secrets and refuses a bad issuer', async () => {
    const list = await down.app.inject({ url: '/admin/v1/identity/providers', headers: down.adminHeaders });
    assert.deepEqual(list.json().data.map((p: { id: string }) => p.id).sort(), ['misnamed', 'upstream']);
    assert.equal(JSON.stringify(list.json()).includes('secret'), false);
    const bad = await down.app.inject({ method: 'POST', url: '/admin/v1/identity/providers', headers: down.adminHeaders, payload: { id: 'evil', name: 'Evil', issuer: 'http://evil.example', client_id: 'a', client_secret: 'b' } });
    assert.equal(bad.statusCode, 400);
    const dup = await down.app.inject({ method: 'POST', url: '/admin/v1/identity/providers', headers: down.adminHeaders, payload: { id: 'upstream', name: 'Again', issuer: upBase, client_id: 'a', client_secret: 'b' } });
    assert.equal(dup.statusCode, 409);
  });

  it('a linked account with a second factor is asked the factor after the upstream sign-in, before any session (issue 40)', async () => {
    const [lena] = await users('lena@example.com');
    const mfa = new Mfa(down.testDb.db, MASTER_KEY, 'payd');
    const enrol = (await mfa.startTotp(lena!.id, 'lena@example.com'))!;
    assert.ok(await mfa.confirmTotp(lena!.id, new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(enrol.secret) }).generate()));
    const b = new Browser();
    const { callback } = await viaUpstream(b, 'lena@example.com');
    const done = await b.go(callback!);
    assert.equal(done.status, 200, done.body);
    assert.match(done.body, /action="\/oauth\/authorize\/mfa"/);
    assert.equal(b.jar(downBase).has('payd_idp_session'), false, 'no session before the factor');
    assert.ok(b.jar(downBase).has('payd_idp_mfa'));
  });
});

// A standards-following upstream that puts only sub in its id_token (node-oidc-provider's
// default) and the email and names in its userinfo: a tiny OIDC provider served here.
describe('social login: an upstream whose id_token carries only sub', () => {
  let down: TestApp;
  let downBase: string;
  let upBase: string;
  let server: Server;
  let rp: { client_id: string; client_secret: string };
  const RP_CALLBACK = 'http://localhost:9/rp/callback';
  const SECRET = 'tiny-upstream-secret-0123456789abcdef';
  /** What the upstream's userinfo says (sub changed by a test to another user's). */
  let userinfo: Record<string, unknown> = {};
  const codes = new Map<string, string>(); // code -> nonce

  before(async () => {
    const upPort = await freePort();
    upBase = `http://localhost:${upPort}`;
    server = createServer((req, res) => {
      const url = new URL(req.url!, upBase);
      const json = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      if (url.pathname === '/.well-known/openid-configuration') {
        return json(200, { issuer: upBase, authorization_endpoint: `${upBase}/authorize`, token_endpoint: `${upBase}/token`, userinfo_endpoint: `${upBase}/me` });
      }
      if (url.pathname === '/authorize') {
        const code = randomBytes(8).toString('hex');
        codes.set(code, url.searchParams.get('nonce')!);
        const back = new URL(url.searchParams.get('redirect_uri')!);
        back.searchParams.set('code', code);
        back.searchParams.set('state', url.searchParams.get('state')!);
        return res.writeHead(303, { location: back.toString() }).end();
      }
      if (url.pathname === '/token') {
        let body = '';
        req.on('data', (c) => { body += c; });
        req.on('end', () => {
          const nonce = codes.get(new URLSearchParams(body).get('code') ?? '');
          if (!nonce) return json(400, { error: 'invalid_grant' });
          void new SignJWT({ nonce }).setProtectedHeader({ alg: 'HS256' }).setIssuer(upBase).setSubject('tiny-1').setAudience('tiny-client')
            .setIssuedAt().setExpirationTime('5m').sign(new TextEncoder().encode(SECRET))
            .then((idToken) => json(200, { access_token: 'tiny-access-token', token_type: 'Bearer', expires_in: 300, id_token: idToken }));
        });
        return undefined;
      }
      if (url.pathname === '/me') {
        if (req.headers.authorization !== 'Bearer tiny-access-token') return json(401, { error: 'invalid_token' });
        return json(200, userinfo);
      }
      return json(404, {});
    });
    await new Promise<void>((r) => server.listen(upPort, '127.0.0.1', r));
    const downPort = await freePort();
    downBase = `http://localhost:${downPort}`;
    down = await createTestApp({ baseUrl: downBase });
    await down.app.listen({ port: downPort, host: '127.0.0.1' });
    const op = async (url: string, payload: object) => {
      const res = await down.app.inject({ method: 'POST', url, headers: down.adminHeaders, payload });
      assert.equal(res.statusCode, 201, res.body);
      return res.json();
    };
    await op('/admin/v1/identity/providers', { id: 'tiny', name: 'Tiny', issuer: upBase, client_id: 'tiny-client', client_secret: SECRET });
    rp = await op('/admin/v1/identity/applications', { name: 'Shop', callback_urls: [RP_CALLBACK] });
  });
  after(async () => {
    await down?.close();
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
  });

  async function signInThroughTiny(b: Browser) {
    const verifier = randomBytes(32).toString('base64url');
    const q = new URLSearchParams({
      response_type: 'code', client_id: rp.client_id, redirect_uri: RP_CALLBACK, scope: 'openid profile email', state: 'rp-state',
      code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256',
    });
    const page = await b.go(`${downBase}/oauth/authorize?${q}`);
    const button = /href="(\/oauth\/federation\/tiny\/start\?[^"]+)"/.exec(page.body);
    assert.ok(button, 'the sign-in page offers the provider');
    const start = await b.go(`${downBase}${button[1]!.replace(/&amp;/g, '&')}`);
    assert.equal(start.status, 303, start.body);
    const upstream = await b.go(start.location!);
    assert.equal(upstream.status, 303);
    return { done: await b.go(upstream.location!), verifier };
  }

  it('takes the email and names from the upstream\'s userinfo (same sub) and signs the user in', async () => {
    userinfo = { sub: 'tiny-1', email: 'tiny@example.com', email_verified: true, given_name: 'Tiny', family_name: 'Upstream' };
    const { done, verifier } = await signInThroughTiny(new Browser());
    assert.equal(done.status, 303, done.body);
    const code = new URL(done.location!).searchParams.get('code')!;
    const res = await down.app.inject({
      method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${rp.client_id}:${rp.client_secret}`).toString('base64')}` },
      payload: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: RP_CALLBACK, code_verifier: verifier }).toString(),
    });
    assert.equal(res.statusCode, 200, res.body);
    const claims = JSON.parse(Buffer.from(res.json().id_token.split('.')[1], 'base64url').toString()) as Record<string, unknown>;
    assert.equal(claims.email, 'tiny@example.com');
    assert.equal(claims.email_verified, true);
    assert.equal(claims.given_name, 'Tiny');
    assert.equal(claims.family_name, 'Upstream');
  });

  it('a userinfo about another sub is refused: an error page, nothing linked', async () => {
    userinfo = { sub: 'someone-else', email: 'victim@example.com', email_verified: true };
    await down.testDb.db.query("DELETE FROM idp_federated_identities WHERE provider_id = 'tiny'");
    const { done } = await signInThroughTiny(new Browser());
    assert.equal(done.status, 400);
    assert.match(done.body, /sub differs/);
    const links = await down.testDb.db.query<{ n: number }>("SELECT count(*)::int AS n FROM idp_federated_identities WHERE provider_id = 'tiny'");
    assert.equal(links.rows[0]!.n, 0);
  });
});
