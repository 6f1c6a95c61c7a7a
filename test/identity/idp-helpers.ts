// Shortcuts of the identity tests: users and applications through the operator API, the
// hosted sign-in driven like a browser (GET the form, post it back with its hidden fields
// and the CSRF cookie), PKCE authorization URLs and code exchanges, all through inject.
import { createHash, randomBytes } from 'node:crypto';
import assert from 'node:assert/strict';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import type { TestApp } from '../helpers/app.ts';

export const PASSWORD = 'correct horse battery staple';
export const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

export interface Client { client_id: string; client_secret: string }

export async function operator<T = Record<string, unknown> & Client>(t: TestApp, url: string, payload: object): Promise<T> {
  const res = await t.app.inject({ method: 'POST', url, headers: t.adminHeaders, payload });
  assert.equal(res.statusCode, 201, res.body);
  return res.json() as T;
}

export const createUser = (t: TestApp, email: string, extra: object = {}) =>
  operator<{ id: string }>(t, '/admin/v1/identity/users', { email, password: PASSWORD, given_name: 'Test', family_name: 'User', ...extra });

export const createClient = (t: TestApp, payload: object) => operator<Client & Record<string, unknown>>(t, '/admin/v1/identity/applications', payload);

/** An authorization request with PKCE S256, state and nonce. */
export function authorizeRequest(clientId: string, redirectUri: string, extra: Record<string, string> = {}) {
  const verifier = randomBytes(32).toString('base64url');
  const state = randomBytes(8).toString('base64url');
  const q = new URLSearchParams({
    response_type: 'code', client_id: clientId, redirect_uri: redirectUri, scope: 'openid profile email', state, nonce: 'n-1',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256', ...extra,
  });
  return { url: `/oauth/authorize?${q}`, verifier, state };
}

export const cookieOf = (res: LightMyRequestResponse, name: string) => {
  const all = ([] as string[]).concat(res.headers['set-cookie'] ?? []);
  const found = all.find((c) => c.startsWith(`${name}=`));
  return found?.split(';')[0];
};

/** The hidden fields of the rendered form, unescaped. */
export function hiddenFields(html: string): URLSearchParams {
  const form = new URLSearchParams();
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"\/?>/g)) {
    form.set(m[1]!, m[2]!.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&'));
  }
  return form;
}

/** Opens the sign-in page of an authorization URL and posts it with these fields. */
export async function signIn(app: FastifyInstance, url: string, fields: Record<string, string>, opts: { ip?: string; dropCsrf?: boolean } = {}) {
  const page = await app.inject({ url, ...(opts.ip ? { remoteAddress: opts.ip } : {}) });
  assert.equal(page.statusCode, 200, page.body);
  const form = hiddenFields(page.body);
  if (opts.dropCsrf) form.delete('csrf');
  for (const [k, v] of Object.entries(fields)) form.set(k, v);
  return app.inject({
    method: 'POST', url: '/oauth/authorize/login', headers: { ...FORM, cookie: cookieOf(page, 'payd_idp_csrf') ?? '' }, payload: form.toString(),
    ...(opts.ip ? { remoteAddress: opts.ip } : {}),
  });
}

/** The text of the page's alert (the sign-in error message). */
export const alertOf = (html: string) => /role="alert">([^<]+)</.exec(html)?.[1];

export const basic = (c: Client) => ({ authorization: `Basic ${Buffer.from(`${c.client_id}:${c.client_secret}`).toString('base64')}` });

export function exchange(app: FastifyInstance, client: Client, code: string, redirectUri: string, verifier?: string) {
  return app.inject({
    method: 'POST', url: '/oauth/token', headers: { ...FORM, ...basic(client) },
    payload: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, ...(verifier ? { code_verifier: verifier } : {}) }).toString(),
  });
}

export async function introspect(app: FastifyInstance, client: Client, token: string): Promise<Record<string, unknown>> {
  const res = await app.inject({ method: 'POST', url: '/oauth/introspect', headers: { ...FORM, ...basic(client) }, payload: new URLSearchParams({ token }).toString() });
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}

/** Signs in through the hosted page and returns the code of the redirect. */
export async function codeFor(app: FastifyInstance, client: Client, redirectUri: string, email: string) {
  const a = authorizeRequest(client.client_id, redirectUri);
  const res = await signIn(app, a.url, { email, password: PASSWORD });
  assert.equal(res.statusCode, 303, res.body);
  const code = new URL(String(res.headers.location)).searchParams.get('code');
  assert.ok(code, String(res.headers.location));
  return { code, verifier: a.verifier, session: cookieOf(res, 'payd_idp_session')! };
}

export async function count(t: TestApp, sql: string, params: unknown[] = []): Promise<number> {
  return (await t.testDb.db.query<{ n: number }>(sql, params)).rows[0]!.n;
}
