// The identity provider's rules: applications and users (created by the operator),
// validation of authorization requests (exact redirect URI match, state, PKCE S256),
// password login with a throttle per account and per IP, single-use authorization codes
// (a replayed code revokes what it issued), and the tokens: an id_token signed HS256
// with the client secret (the spec) and an access token the provider verifies itself.
import { createHash, createSecretKey, randomBytes, randomUUID } from 'node:crypto';
import type { Db } from '../../platform/db/index.ts';
import type { KeyPurpose, KeyStore } from '../../platform/crypto/keystore.ts';
import { decrypt, encrypt, safeEqual, sha256 } from '../../platform/crypto/secrets.ts';
import { JwsError, decodeJwt, signJwt, verifyJwt } from '../../platform/crypto/compact-jws.ts';
import { SignJWT } from 'jose';
import { problems } from '../../platform/http/problem.ts';
import { oauthError } from '../oauth/oauth-errors.ts';
import { type AppRow, type UserRow, idpRepo } from './idp.repo.ts';
import { DUMMY_HASH, hashPassword, verifyPassword } from './passwords.ts';

export const IDP_ACCESS_TOKEN_KEYS: KeyPurpose = { name: 'idp-access-token', alg: 'HS256', overlapSeconds: 2 * 86400 };
/** id_tokens of public clients (no secret to sign HS256 with): RS256, published at /.well-known/jwks.json. */
export const IDP_ID_TOKEN_KEYS: KeyPurpose = { name: 'idp-id-token', alg: 'RS256', overlapSeconds: 2 * 86400 };
export const CODE_TTL_SECONDS = 60;
export const TOKEN_TTL_SECONDS = 3600;
export const SESSION_TTL_SECONDS = 8 * 3600;
export const THROTTLE = { windowSeconds: 900, perAccount: 5, perIp: 30 };
const SCOPES = new Set(['openid', 'profile', 'email']);

const hex = (s: string) => sha256(s).toString('hex');

/** An authorization request as validated (the login form carries it through). */
export interface AuthRequest {
  client_id: string;
  redirect_uri: string;
  response_type: string;
  scope: string;
  state: string;
  nonce?: string | undefined;
  code_challenge?: string | undefined;
  code_challenge_method?: string | undefined;
  /** messenger_code only: the messenger's token, carried through the login form. */
  account_linking_token?: string | undefined;
}

/** Where a refusal goes: back to the client (redirect URI valid) or to an error page. */
export class AuthorizeError extends Error {
  constructor(
    readonly error: string, readonly description: string, readonly redirectUri?: string, readonly state?: string,
    /** messenger_code: the error goes back as error=access_denied only (the messenger's format). */
    readonly messenger = false,
  ) {
    super(description);
  }
}

export interface IdentityOptions {
  /** Accept http:// redirect URIs on localhost (development); otherwise https only. */
  allowHttpLocalhost: boolean;
  /** {identity_claims_base} of the spec: namespace of payd's own claims. */
  claimsBase?: string;
}

/** scheme://host/path of a URL (the "base" a messenger redirect_uri is matched by). */
const baseOf = (u: URL) => `${u.protocol}//${u.host}${u.pathname}`;

export class IdentityService {
  constructor(
    private readonly db: Db, private readonly keys: KeyStore, private readonly masterKey: Buffer, private readonly issuer: string,
    private readonly options: IdentityOptions = { allowHttpLocalhost: true },
  ) {}

  // ---- administration (operator API) ----

  async createUser(input: { email: string; password: string; given_name?: string; family_name?: string; email_verified?: boolean; is_admin?: boolean }) {
    const row = await idpRepo.insertUser(this.db, {
      id: randomUUID(), email: input.email, password_hash: await hashPassword(input.password), given_name: input.given_name ?? null,
      family_name: input.family_name ?? null, email_verified: input.email_verified ?? false, is_admin: input.is_admin ?? false,
    });
    if (!row) throw problems.conflict('A user with this email already exists.');
    return userView(row);
  }

  /** Checks callback URLs and origins; returns the invalid field's problem. */
  private checkUrls(callbacks: string[] | undefined, origins: string[] | undefined): void {
    for (const [i, u] of (callbacks ?? []).entries()) {
      let url: URL;
      try {
        url = new URL(u);
      } catch {
        throw problems.invalidField(`callback_urls[${i}]`, 'is not an absolute URL');
      }
      if (url.hash) throw problems.invalidField(`callback_urls[${i}]`, 'must not have a fragment (RFC 6749 3.1.2)');
    }
    for (const [i, o] of (origins ?? []).entries()) {
      let ok = false;
      try {
        ok = new URL(o).origin === o;
      } catch { /* not a URL */ }
      if (!ok) throw problems.invalidField(`allowed_origins[${i}]`, 'must be an origin such as https://app.example.com (no path)');
    }
  }

  async updateApplication(clientId: string, patch: { name?: string; callback_urls?: string[]; allowed_origins?: string[]; first_party?: boolean }) {
    this.checkUrls(patch.callback_urls, patch.allowed_origins);
    const row = await idpRepo.updateApp(this.db, clientId, patch);
    if (!row) throw problems.notFound('No such application.');
    return appView(row);
  }

  async application(clientId: string) {
    const row = await idpRepo.app(this.db, clientId);
    if (!row) throw problems.notFound('No such application.');
    return appView(row);
  }

  async createApplication(input: {
    name: string; callback_urls: string[]; allowed_origins?: string[]; first_party?: boolean;
    token_endpoint_auth_method?: AppRow['token_endpoint_auth_method']; response_types?: string[]; management_scopes?: string[];
    id_token_signed_response_alg?: 'HS256' | 'RS256';
  }) {
    this.checkUrls(input.callback_urls, input.allowed_origins);
    const method = input.token_endpoint_auth_method ?? 'client_secret_basic';
    const clientId = randomBytes(16).toString('base64url');
    const secret = method === 'none' ? undefined : randomBytes(32).toString('base64url'); // 256 bits
    const row = await idpRepo.insertApp(this.db, {
      client_id: clientId, name: input.name, secret_hash: secret ? hex(secret) : null,
      secret_enc: secret ? encrypt(this.masterKey, secret, `idp-client:${clientId}`) : null, first_party: input.first_party ?? false,
      callback_urls: input.callback_urls, allowed_origins: input.allowed_origins ?? [], token_endpoint_auth_method: method,
      response_types: input.response_types ?? ['code'], management_scopes: input.management_scopes ?? [],
      id_token_alg: method === 'none' ? 'RS256' : (input.id_token_signed_response_alg ?? 'HS256'),
    });
    return { ...appView(row), ...(secret ? { client_secret: secret } : {}) };
  }

  // ---- authorization requests ----

  /** Validates an authorization request; errors say whether the client may be told. */
  async validate(q: Record<string, unknown>): Promise<{ request: AuthRequest; app: AppRow }> {
    const str = (k: string) => (typeof q[k] === 'string' && q[k] !== '' ? (q[k] as string) : undefined);
    const clientId = str('client_id');
    const app = clientId ? await idpRepo.app(this.db, clientId) : undefined;
    if (!app) throw new AuthorizeError('invalid_request', 'Unknown or missing client_id.');
    const responseType = str('response_type');
    const redirectUri = str('redirect_uri');
    let parsed: URL | undefined;
    try {
      parsed = redirectUri ? new URL(redirectUri) : undefined;
    } catch {
      parsed = undefined;
    }
    // messenger_code: the messenger adds its own query string, so its account-linking URL
    // is matched by scheme, host and path; every other flow matches exactly.
    const messenger = responseType === 'messenger_code';
    const registered = parsed && (messenger
      ? app.callback_urls.some((c) => { try { return baseOf(new URL(c)) === baseOf(parsed!); } catch { return false; } })
      : app.callback_urls.includes(redirectUri!));
    if (!parsed || !registered) {
      throw new AuthorizeError('invalid_request', 'redirect_uri is missing or is not one of the Allowed Callback URLs of this application (exact match).');
    }
    const local = parsed.hostname === 'localhost' || parsed.hostname === '127.0.0.1';
    if (parsed.protocol !== 'https:' && !(this.options.allowHttpLocalhost && local && parsed.protocol === 'http:')) {
      throw new AuthorizeError('invalid_request', 'redirect_uri must use https (http is allowed on localhost in development only).');
    }
    if (messenger) {
      if (!app.response_types.includes('messenger_code')) throw new AuthorizeError('access_denied', 'This application does not use messenger account linking.', redirectUri, undefined, true);
      const linking = str('account_linking_token');
      if (!linking) throw new AuthorizeError('access_denied', 'account_linking_token is required.', redirectUri, undefined, true);
      return {
        app,
        request: { client_id: app.client_id, redirect_uri: redirectUri!, response_type: 'messenger_code', scope: 'openid profile email', state: '', account_linking_token: linking },
      };
    }
    const state = str('state');
    const fail = (error: string, description: string) => new AuthorizeError(error, description, redirectUri, state);
    if (!state) throw fail('invalid_request', 'state is required.');
    if (responseType !== 'code') throw fail('unsupported_response_type', 'response_type must be code (or messenger_code for messenger account linking).');
    if (!app.response_types.includes('code')) throw fail('unauthorized_client', 'This application may not use response_type=code.');
    const scope = str('scope') ?? 'openid profile email'; // the spec's id_token carries the name and email
    if (!scope.split(' ').every((s) => SCOPES.has(s)) || !scope.split(' ').includes('openid')) {
      throw fail('invalid_scope', 'scope must include openid and may add profile and email.');
    }
    const challenge = str('code_challenge');
    const method = str('code_challenge_method');
    if (challenge && method !== 'S256') throw fail('invalid_request', 'code_challenge_method must be S256.');
    if (challenge && !/^[A-Za-z0-9_-]{43}$/.test(challenge)) throw fail('invalid_request', 'code_challenge must be a base64url SHA-256.');
    if (!challenge && app.token_endpoint_auth_method === 'none') throw fail('invalid_request', 'PKCE (code_challenge, S256) is required for public clients.');
    return {
      app,
      request: { client_id: app.client_id, redirect_uri: redirectUri!, response_type: 'code', scope, state, nonce: str('nonce'), code_challenge: challenge, code_challenge_method: method },
    };
  }

  // ---- login ----

  /** Checks the password under the throttle; the same answer for an unknown email and a wrong password. */
  async login(email: string, password: string, ip: string): Promise<UserRow> {
    const recent = await idpRepo.recentFailures(this.db, email, ip, THROTTLE.windowSeconds);
    if (recent.by_email >= THROTTLE.perAccount || recent.by_ip >= THROTTLE.perIp) {
      throw problems.tooManyRequests('Too many failed sign-in attempts. Try again in 15 minutes.', THROTTLE.windowSeconds);
    }
    const user = await idpRepo.userByEmail(this.db, email);
    const ok = await verifyPassword(password, user?.password_hash ?? DUMMY_HASH);
    if (!user || !ok || user.blocked) {
      await idpRepo.recordFailure(this.db, email, ip);
      throw problems.unauthorized('Wrong email or password.');
    }
    return user;
  }

  async newSession(userId: string): Promise<string> {
    const value = randomBytes(32).toString('base64url');
    await idpRepo.insertSession(this.db, hex(value), userId, SESSION_TTL_SECONDS);
    return value;
  }

  async sessionUser(cookie: string | undefined): Promise<{ user: UserRow; auth_time: Date } | undefined> {
    if (!cookie) return undefined;
    const s = await idpRepo.session(this.db, hex(cookie));
    const user = s ? await idpRepo.user(this.db, s.user_id) : undefined;
    return user && !user.blocked ? { user, auth_time: s!.auth_time } : undefined;
  }

  /** Issues the code and returns the redirect that carries it (login-as: with the auditing name). */
  async issueCode(r: AuthRequest, userId: string, authTime: Date, loginAs?: { name: string }): Promise<string> {
    const code = randomBytes(32).toString('base64url');
    const messenger = r.response_type === 'messenger_code';
    // A messenger code is exchanged with the account-linking URL itself (no query string).
    const boundRedirect = messenger ? baseOf(new URL(r.redirect_uri)) : r.redirect_uri;
    await idpRepo.insertCode(this.db, {
      code_hash: hex(code), client_id: r.client_id, user_id: userId, redirect_uri: boundRedirect, scope: r.scope,
      nonce: r.nonce ?? null, code_challenge: r.code_challenge ?? null, auth_time: authTime, login_as_name: loginAs?.name ?? null,
    }, CODE_TTL_SECONDS);
    await idpRepo.insertEvent(this.db, {
      id: randomUUID(), user_id: userId, type: 'login', auth_type: loginAs ? 'login_as' : 'password', client_id: r.client_id, login_as_profile_id: loginAs?.name ?? null,
    });
    const url = new URL(r.redirect_uri);
    if (messenger) {
      url.searchParams.append('authorization_code', code);
      return url.toString();
    }
    url.searchParams.set('code', code);
    if (r.state) url.searchParams.set('state', r.state);
    url.searchParams.set('iss', this.issuer);
    return url.toString();
  }

  // ---- token endpoint: grant_type=authorization_code ----

  private async clientOf(headers: Record<string, unknown>, body: Record<string, unknown>): Promise<AppRow> {
    let id = typeof body.client_id === 'string' ? body.client_id : undefined;
    let secret = typeof body.client_secret === 'string' ? body.client_secret : undefined;
    const auth = typeof headers.authorization === 'string' ? headers.authorization : undefined;
    let via: AppRow['token_endpoint_auth_method'] = secret ? 'client_secret_post' : 'none';
    if (auth?.startsWith('Basic ')) {
      const [u, p] = Buffer.from(auth.slice(6), 'base64').toString('utf8').split(':');
      if (id && decodeURIComponent(u ?? '') !== id) throw oauthError('invalid_client', 'client_id differs from the Basic credentials.');
      id = decodeURIComponent(u ?? '');
      secret = decodeURIComponent(p ?? '');
      via = 'client_secret_basic';
    }
    const app = id ? await idpRepo.app(this.db, id) : undefined;
    if (!app) throw oauthError('invalid_client', 'Unknown client.');
    if (app.token_endpoint_auth_method === 'none') {
      if (secret) throw oauthError('invalid_client', 'This public client has no secret.');
      return app;
    }
    if (via === 'none' || !secret || !app.secret_hash || !safeEqual(hex(secret), app.secret_hash)) {
      throw oauthError('invalid_client', 'Client authentication failed.');
    }
    return app;
  }

  async exchangeCode(headers: Record<string, unknown>, body: Record<string, unknown>) {
    const app = await this.clientOf(headers, body);
    const code = typeof body.code === 'string' ? body.code : '';
    const used = code ? await idpRepo.useCode(this.db, hex(code)) : undefined;
    if (!used) throw oauthError('invalid_grant', 'The authorization code is not valid.');
    const c = used.code;
    if (!used.firstUse) {
      await idpRepo.revokeTokensOfCode(this.db, c.code_hash);
      throw oauthError('invalid_grant', 'The authorization code was already used; the tokens issued from it are revoked.');
    }
    if (c.client_id !== app.client_id) throw oauthError('invalid_grant', 'The authorization code was issued to another client.');
    if (c.expires_at.getTime() <= Date.now()) throw oauthError('invalid_grant', 'The authorization code has expired.');
    if (body.redirect_uri !== c.redirect_uri) throw oauthError('invalid_grant', 'redirect_uri differs from the one of the authorization request.');
    if (c.code_challenge) {
      const verifier = typeof body.code_verifier === 'string' ? body.code_verifier : '';
      const computed = createHash('sha256').update(verifier).digest('base64url');
      if (!/^[A-Za-z0-9._~-]{43,128}$/.test(verifier) || !safeEqual(computed, c.code_challenge)) throw oauthError('invalid_grant', 'PKCE verification failed.');
    } else if (body.code_verifier !== undefined) {
      throw oauthError('invalid_grant', 'code_verifier sent for a request without code_challenge.');
    }
    const user = await idpRepo.user(this.db, c.user_id);
    if (!user || user.blocked) throw oauthError('invalid_grant', 'The user cannot sign in.');

    const now = Math.floor(Date.now() / 1000);
    const accessToken = await this.userAccessToken(user.id, app.client_id, c.scope, c.code_hash, c.login_as_name);
    const scopes = c.scope.split(' ');
    const claims = {
      iss: this.issuer, sub: user.id, aud: app.client_id, iat: now, exp: now + TOKEN_TTL_SECONDS, auth_time: Math.floor(c.auth_time.getTime() / 1000),
      ...(c.nonce ? { nonce: c.nonce } : {}),
      ...(scopes.includes('profile') ? { given_name: user.given_name, family_name: user.family_name } : {}),
      ...(scopes.includes('email') ? { email: user.email, email_verified: user.email_verified } : {}),
    };
    let idToken: string;
    if (app.secret_enc && app.id_token_alg === 'HS256') {
      idToken = signJwt('HS256', { typ: 'JWT' }, claims, createSecretKey(Buffer.from(decrypt(this.masterKey, app.secret_enc, `idp-client:${app.client_id}`))));
    } else {
      const rsa = await this.keys.signingKey(IDP_ID_TOKEN_KEYS.name);
      idToken = await new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: rsa.kid, typ: 'JWT' }).sign(rsa.privateKey);
    }
    return { access_token: accessToken, token_type: 'Bearer' as const, expires_in: TOKEN_TTL_SECONDS, scope: c.scope, id_token: idToken };
  }

  /** Claim name of the login-as auditing name ({identity_claims_base}/login-as-name). */
  get loginAsClaim(): string {
    return `${this.options.claimsBase ?? `${this.issuer}/claims`}/login-as-name`;
  }

  /** A user's access token (recorded by jti, so that it can be revoked). */
  async userAccessToken(userId: string, clientId: string, scope: string, codeHash: string | null, loginAsName: string | null): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    const jti = randomUUID();
    await idpRepo.insertToken(this.db, { jti, code_hash: codeHash, client_id: clientId, user_id: userId, ttlSeconds: TOKEN_TTL_SECONDS, login_as_name: loginAsName });
    const key = await this.keys.signingKey(IDP_ACCESS_TOKEN_KEYS.name);
    return signJwt('HS256', { kid: key.kid, typ: 'at+jwt' }, {
      iss: this.issuer, sub: userId, aud: clientId, client_id: clientId, scope, iat: now, exp: now + TOKEN_TTL_SECONDS, jti,
      ...(loginAsName ? { [this.loginAsClaim]: loginAsName } : {}),
    }, key.privateKey);
  }

  /** A user access token issued here, signature and claims checked (not its revocation). */
  private async userTokenClaims(token: string): Promise<Record<string, unknown> | undefined> {
    try {
      const decoded = decodeJwt(token);
      const key = await this.keys.verificationKey(IDP_ACCESS_TOKEN_KEYS.name, typeof decoded.header.kid === 'string' ? decoded.header.kid : '');
      if (!key) return undefined;
      return verifyJwt('HS256', decoded, key.publicKey, { issuer: this.issuer, audience: String(decoded.payload.aud), typ: 'at+jwt' });
    } catch {
      return undefined;
    }
  }

  /** RFC 7662: a client learns about its own tokens only; anything else is inactive. */
  async introspect(headers: Record<string, unknown>, body: Record<string, unknown>) {
    const app = await this.clientOf(headers, body);
    const claims = typeof body.token === 'string' ? await this.userTokenClaims(body.token) : undefined;
    if (!claims || claims.client_id !== app.client_id || !(await idpRepo.tokenActive(this.db, String(claims.jti)))) return { active: false };
    return {
      active: true, token_type: 'Bearer', scope: claims.scope, client_id: claims.client_id, sub: claims.sub, aud: claims.aud,
      iss: claims.iss, exp: claims.exp, iat: claims.iat, jti: claims.jti,
      ...(claims[this.loginAsClaim] ? { [this.loginAsClaim]: claims[this.loginAsClaim] } : {}),
    };
  }

  /** RFC 7009: revokes a token of the calling client; answers the same whatever the token. */
  async revoke(headers: Record<string, unknown>, body: Record<string, unknown>): Promise<void> {
    const app = await this.clientOf(headers, body);
    const claims = typeof body.token === 'string' ? await this.userTokenClaims(body.token) : undefined;
    if (claims && claims.client_id === app.client_id) await idpRepo.revokeToken(this.db, String(claims.jti), app.client_id);
  }

  /** /userinfo: the claims of the user behind an access token this provider issued and did not revoke. */
  async userinfo(token: string | undefined) {
    const invalid = () => problems.unauthorized('The access token is not valid.', 'Bearer realm="payd-identity", error="invalid_token"');
    if (!token) throw problems.unauthorized('An access token is required.', 'Bearer realm="payd-identity"');
    let payload: Record<string, unknown>;
    try {
      const decoded = decodeJwt(token);
      const kid = typeof decoded.header.kid === 'string' ? decoded.header.kid : '';
      const key = await this.keys.verificationKey(IDP_ACCESS_TOKEN_KEYS.name, kid);
      if (!key) throw invalid();
      payload = verifyJwt('HS256', decoded, key.publicKey, { issuer: this.issuer, audience: String(decoded.payload.aud), typ: 'at+jwt' });
    } catch (err) {
      if (err instanceof JwsError || err instanceof Error) throw invalid();
      throw err;
    }
    if (!(await idpRepo.tokenActive(this.db, String(payload.jti)))) throw invalid();
    const user = await idpRepo.user(this.db, String(payload.sub));
    if (!user || user.blocked) throw invalid();
    const scopes = String(payload.scope).split(' ');
    return {
      sub: user.id,
      ...(scopes.includes('profile') ? { given_name: user.given_name, family_name: user.family_name } : {}),
      ...(scopes.includes('email') ? { email: user.email, email_verified: user.email_verified } : {}),
    };
  }

  async jwks() {
    return { keys: (await this.keys.published(IDP_ID_TOKEN_KEYS.name)).map((k) => ({ ...k.publicJwk })) };
  }

  async events(userId: string) {
    return idpRepo.events(this.db, userId);
  }
}

export function userView(u: UserRow) {
  return { id: u.id, email: u.email, given_name: u.given_name, family_name: u.family_name, email_verified: u.email_verified, blocked: u.blocked, created_at: u.created_at };
}

export function appView(a: AppRow) {
  return {
    client_id: a.client_id, name: a.name, first_party: a.first_party, callback_urls: a.callback_urls, allowed_origins: a.allowed_origins,
    token_endpoint_auth_method: a.token_endpoint_auth_method, id_token_signed_response_alg: a.id_token_alg, response_types: a.response_types,
    management_scopes: a.management_scopes, created_at: a.created_at,
  };
}
