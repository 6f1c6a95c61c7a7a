// The identity provider's rules: applications and users (created by the operator),
// validation of authorization requests (exact redirect URI match, state, PKCE S256),
// password login with a throttle per account and per IP, single-use authorization codes
// (a replayed code revokes what it issued), and the tokens: an id_token signed HS256
// with the client secret (the spec) and an access token the provider verifies itself.
import { randomBytes, randomUUID } from 'node:crypto';
import type { Db, Queryable } from '../../platform/db/index.ts';
import type { KeyStore } from '../../platform/crypto/keystore.ts';
import { sha256 } from '../../platform/crypto/secrets.ts';
import { problems } from '../../platform/http/problem.ts';
import { Applications, grantTypesOf, type NewApplication } from '../applications/applications.ts';
import { authenticateClient } from '../oauth/client-auth.ts';
import { IDP_ID_TOKEN_KEYS } from '../oauth/id-token.ts';
import { authorizationCodeGrant } from '../oauth/grants/authorization-code.ts';
import { refreshTokenGrant } from '../oauth/grants/refresh-token.ts';
import { enablePasswordGrant, passwordGrant } from '../oauth/grants/password.ts';
import { UserTokens } from '../oauth/user-tokens.ts';
import { type VerifiedHint, verifyIdTokenHint } from '../oauth/id-token-hint.ts';
import { type AppRow, type UserRow, idpRepo } from './idp.repo.ts';
import { DUMMY_HASH, hashPassword, verifyPassword } from './passwords.ts';
import { type LoginTokenRow, sdkRepo } from '../sdk/sdk.repo.ts';
import { type Clock, systemClock } from '../../platform/clock.ts';
import type { SecondFactor } from '../mfa/mfa.ts';
import { LoginThrottle } from './throttle.ts';
import type { Amr } from '../mfa/amr.ts';

export { IDP_ACCESS_TOKEN_KEYS, TOKEN_TTL_SECONDS } from '../oauth/user-tokens.ts';
export { IDP_ID_TOKEN_KEYS } from '../oauth/id-token.ts';
export { appView } from '../applications/applications.ts';
export type { AppRow, UserRow } from './idp.repo.ts';
export const CODE_TTL_SECONDS = 60;
export const SESSION_TTL_SECONDS = 8 * 3600;
/** Sign-ups: 10 per address in 15 minutes. The sign-in throttle is LoginThrottle (throttle.ts). */
export const THROTTLE = { windowSeconds: 900, signupsPerIp: 10 };
// phone: asked for by the identity SDK by default; payd keeps no phone numbers, so it adds no claim.
const SCOPES = new Set(['openid', 'profile', 'email', 'phone', 'offline_access']);
/** prompt values served (prompt_values_supported of discovery). */
export const PROMPT_VALUES: readonly string[] = ['none', 'login', 'consent'];
/** What each scope lets an application do, in the words of the consent page. */
export const SCOPE_WORDS: Readonly<Record<string, string>> = {
  openid: 'Know who you are: your payd account identifier',
  profile: 'See your name',
  email: 'See your email address and whether it is verified',
  offline_access: 'Keep access while you are not using it, until you withdraw it',
};

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
  /**
   * prompt values (none, login, consent): none and login are read on GET /oauth/authorize
   * (the login form's post is the re-authentication); consent is carried through the
   * sign-in form so that the consent page shows after it.
   */
  prompt?: string[] | undefined;
  /** max_age in seconds: a session signed in longer ago must sign in again. */
  max_age?: number | undefined;
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
  /** The sign-in throttle's time (tests move it); default the system clock. */
  clock?: Clock;
}

/**
 * The URI with parameters added to its query string, leaving the query it has as it is
 * (RFC 6749 3.1.2: the client's query component is kept; a messenger's own parameters
 * come back byte for byte): `?` when it has none, `&` otherwise.
 */
export function appendQuery(uri: string, params: Record<string, string>): string {
  const added = new URLSearchParams(params).toString();
  if (!uri.includes('?')) return `${uri}?${added}`;
  return uri.endsWith('?') || uri.endsWith('&') ? `${uri}${added}` : `${uri}&${added}`;
}

/** scheme://host/path of a URL (the "base" a messenger redirect_uri is matched by). */
const baseOf = (u: URL) => `${u.protocol}//${u.host}${u.pathname}`;

/** The query parameters a messenger platform adds to its account-linking URL. */
export const MESSENGER_QUERY_PARAMS: readonly string[] = ['account_linking_token', 'psid'];

/**
 * Whether `uri` is one of the registered callbacks with only messenger parameters added:
 * same scheme, host and path, no user info, every parameter of the registered query
 * present with its value, and nothing else but MESSENGER_QUERY_PARAMS (each once).
 */
function messengerCallback(callbacks: string[], uri: URL): boolean {
  if (uri.username || uri.password) return false;
  const keys = [...uri.searchParams.keys()];
  if (new Set(keys).size !== keys.length) return false;
  return callbacks.some((c) => {
    let reg: URL;
    try {
      reg = new URL(c);
    } catch {
      return false;
    }
    if (baseOf(reg) !== baseOf(uri) || reg.username || reg.password) return false;
    for (const [k, v] of reg.searchParams) if (uri.searchParams.get(k) !== v) return false;
    return keys.every((k) => reg.searchParams.has(k) || MESSENGER_QUERY_PARAMS.includes(k));
  });
}

export class IdentityService {
  constructor(
    private readonly db: Db, private readonly keys: KeyStore, private readonly masterKey: Buffer, private readonly issuer: string,
    private readonly options: IdentityOptions = { allowHttpLocalhost: true },
  ) {
    this.applications = new Applications(db, masterKey);
    this.tokens = new UserTokens(db, keys, issuer, `${options.claimsBase ?? `${issuer}/claims`}/login-as-name`);
    this.throttle = new LoginThrottle(options.clock ?? systemClock);
  }

  private readonly throttle: LoginThrottle;

  readonly applications: Applications;
  readonly tokens: UserTokens;

  // ---- administration (operator API) ----

  /** Counts a sign-up from this address; 429 past THROTTLE.signupsPerIp in the window. */
  async signupAllowed(ip: string): Promise<void> {
    if ((await idpRepo.recordSignup(this.db, ip, THROTTLE.windowSeconds)) > THROTTLE.signupsPerIp) {
      throw problems.tooManyRequests('Too many accounts were created from this address. Try again in 15 minutes.', THROTTLE.windowSeconds);
    }
  }

  /**
   * Registers an application (POST /admin/v1/identity/applications): grant_types with
   * password opts it into the password grant, for first-party confidential applications only.
   */
  async registerApplication({ grant_types: grantTypes, ...input }: NewApplication & { grant_types?: readonly string[] }) {
    const password = grantTypes?.includes('password') ?? false;
    if (password && (input.token_endpoint_auth_method === 'none' || input.first_party === false)) {
      throw problems.invalidField('grant_types', 'password is only for first-party confidential applications (RFC 9700: never for public clients)');
    }
    const created = await this.applications.create(input);
    if (password) await enablePasswordGrant(this.db, created.client_id);
    return { ...created, grant_types: grantTypesOf(password) };
  }

  async createUser(input: { email: string; password: string; given_name?: string; family_name?: string; email_verified?: boolean; is_admin?: boolean }) {
    const row = await idpRepo.insertUser(this.db, {
      id: randomUUID(), email: input.email, password_hash: await hashPassword(input.password), given_name: input.given_name ?? null,
      family_name: input.family_name ?? null, email_verified: input.email_verified ?? false, is_admin: input.is_admin ?? false,
    });
    if (!row) throw problems.conflict('A user with this email already exists.');
    return userView(row);
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
    // Exact match for code (and login-as's token). messenger_code only for an application
    // that enables it, to a registered callback with the same scheme, host and path, where
    // only the messenger's own parameters may be added to the registered query; any other
    // redirect_uri is refused on an error page, never redirected to.
    const messenger = responseType === 'messenger_code' && app.response_types.includes('messenger_code');
    const registered = parsed && (messenger ? messengerCallback(app.callback_urls, parsed) : app.callback_urls.includes(redirectUri!));
    if (!parsed || !registered || redirectUri!.includes('#')) {
      throw new AuthorizeError('invalid_request', 'redirect_uri is missing or is not one of the Allowed Callback URLs of this application (exact match).');
    }
    const local = parsed.hostname === 'localhost' || parsed.hostname === '127.0.0.1';
    if (parsed.protocol !== 'https:' && !(this.options.allowHttpLocalhost && local && parsed.protocol === 'http:')) {
      throw new AuthorizeError('invalid_request', 'redirect_uri must use https (http is allowed on localhost in development only).');
    }
    if (responseType === 'messenger_code' && !messenger) {
      throw new AuthorizeError('access_denied', 'This application does not use messenger account linking.', redirectUri, undefined, true);
    }
    if (messenger) {
      // The messenger puts it in the redirect_uri it hands to the login page; the identity
      // SDK passes that redirect_uri as it is (spec: "the redirect URI taken from the
      // redirect_uri query parameter supplied by the messenger").
      const linking = str('account_linking_token') ?? parsed.searchParams.get('account_linking_token') ?? undefined;
      if (!linking) throw new AuthorizeError('access_denied', 'account_linking_token is required.', redirectUri, undefined, true);
      return {
        app,
        request: { client_id: app.client_id, redirect_uri: redirectUri!, response_type: 'messenger_code', scope: 'openid profile email', state: '', account_linking_token: linking },
      };
    }
    const state = str('state');
    const fail = (error: string, description: string) => new AuthorizeError(error, description, redirectUri, state);
    // OpenID Connect Core 6.1 / 6.2: request objects are not supported; said, not ignored.
    if (q.request !== undefined) throw fail('request_not_supported', 'The request parameter (request object) is not supported.');
    if (q.request_uri !== undefined) throw fail('request_uri_not_supported', 'The request_uri parameter is not supported.');
    // state protects the redirect against CSRF; PKCE does too (RFC 9700 2.1.1), so a
    // request with a code_challenge may omit state, as openid-client's PKCE-only flow does.
    if (!state && !str('code_challenge')) throw fail('invalid_request', 'state is required unless PKCE (code_challenge) is used.');
    if (responseType !== 'code') throw fail('unsupported_response_type', 'response_type must be code (or messenger_code for messenger account linking).');
    if (!app.response_types.includes('code')) throw fail('unauthorized_client', 'This application may not use response_type=code.');
    const scope = str('scope') ?? 'openid profile email'; // the spec's id_token carries the name and email
    if (!scope.split(' ').every((s) => SCOPES.has(s)) || !scope.split(' ').includes('openid')) {
      throw fail('invalid_scope', 'scope must include openid and may add profile, email and offline_access.');
    }
    const challenge = str('code_challenge');
    const method = str('code_challenge_method');
    if (challenge && method !== 'S256') throw fail('invalid_request', 'code_challenge_method must be S256.');
    if (challenge && !/^[A-Za-z0-9_-]{43}$/.test(challenge)) throw fail('invalid_request', 'code_challenge must be a base64url SHA-256.');
    if (!challenge && app.token_endpoint_auth_method === 'none') throw fail('invalid_request', 'PKCE (code_challenge, S256) is required for public clients.');
    // OpenID Connect Core 3.1.2.1: prompt (none, login) and max_age.
    const prompt = (str('prompt') ?? '').split(' ').filter(Boolean);
    if (!prompt.every((p) => PROMPT_VALUES.includes(p))) throw fail('invalid_request', `prompt may be ${PROMPT_VALUES.join(' or ')}.`);
    if (prompt.includes('none') && prompt.length > 1) throw fail('invalid_request', 'prompt=none cannot be combined with another value.');
    const maxAgeText = str('max_age');
    if (maxAgeText !== undefined && !/^\d{1,9}$/.test(maxAgeText)) throw fail('invalid_request', 'max_age must be a number of seconds.');
    return {
      app,
      request: {
        client_id: app.client_id, redirect_uri: redirectUri!, response_type: 'code', scope, state: state ?? '', nonce: str('nonce'), code_challenge: challenge, code_challenge_method: method,
        ...(prompt.length ? { prompt } : {}), ...(maxAgeText !== undefined ? { max_age: Number(maxAgeText) } : {}),
      },
    };
  }

  // ---- login ----

  /**
   * Checks the password under the throttle (throttle.ts: recorded before the check, so
   * parallel guesses cannot slip past); the same answer for an unknown email, a wrong
   * password and a blocked user. A successful attempt is not kept as a failure.
   */
  async login(email: string, password: string, ip: string): Promise<UserRow> {
    const attempt = await this.throttle.begin(this.db, email, ip);
    const user = await idpRepo.userByEmail(this.db, email);
    const ok = await verifyPassword(password, user?.password_hash ?? DUMMY_HASH);
    if (!user || !ok || user.blocked) throw problems.unauthorized('Wrong email or password.');
    await this.throttle.succeeded(this.db, attempt, email, ip);
    return user;
  }

  /** The one-time token (tkn) of a password login or sign-up through the SDK, used now; undefined when not valid for this client. */
  consumeLoginToken(tkn: string, clientId: string): Promise<LoginTokenRow | undefined> {
    return sdkRepo.useLoginToken(this.db, hex(tkn), clientId);
  }

  /**
   * A password reset (the mailed link's token, by its hash): the new password, and, in the
   * same transaction, every session, refresh and access token of the user ended and every
   * other reset link of theirs voided. undefined when the link is not valid any more.
   */
  async resetPassword(tokenHash: string, password: string): Promise<{ return_to: string | null } | undefined> {
    const hash = await hashPassword(password);
    return this.db.transaction(async (tx) => {
      const r = await sdkRepo.reset(tx, tokenHash, true);
      if (!r) return undefined;
      await idpRepo.updateUser(tx, r.user_id, { password_hash: hash });
      await idpRepo.endCredentials(tx, r.user_id);
      await sdkRepo.endResets(tx, r.user_id);
      return { return_to: r.return_to };
    });
  }

  /** An application by its client id (the authorization request's, before it is validated). */
  application(clientId: string): Promise<AppRow | undefined> {
    return idpRepo.app(this.db, clientId);
  }

  /** A user by id (blocked ones too: the caller decides). */
  user(id: string): Promise<UserRow | undefined> {
    return idpRepo.user(this.db, id);
  }

  /** Who requires this user to keep a second factor (a merchant team, or the console when it requires one), if anyone. */
  secondFactorRequiredBy(userId: string, consoleRequires: boolean): Promise<string | undefined> {
    return idpRepo.secondFactorRequiredBy(this.db, userId, consoleRequires);
  }

  /** A new sign-in session made with these methods (amr, src/identity/mfa/amr.ts): the cookie's value. */
  async newSession(userId: string, amr: readonly Amr[]): Promise<string> {
    const value = randomBytes(32).toString('base64url');
    await idpRepo.insertSession(this.db, hex(value), userId, SESSION_TTL_SECONDS, amr);
    return value;
  }

  async sessionUser(cookie: string | undefined): Promise<{ user: UserRow; auth_time: Date; amr: string[] } | undefined> {
    if (!cookie) return undefined;
    const s = await idpRepo.session(this.db, hex(cookie));
    const user = s ? await idpRepo.user(this.db, s.user_id) : undefined;
    return user && !user.blocked ? { user, auth_time: s!.auth_time, amr: s!.amr } : undefined;
  }

  /** The sign-in session (its id, not the cookie) a code was issued from, if any. */
  async codeSession(code: string): Promise<string | undefined> {
    return idpRepo.codeSession(this.db, hex(code));
  }

  /** A sign-in session (by id) still alive for this user, not blocked: its methods (amr); undefined when it is not. */
  async sessionAlive(sessionId: string, userId: string): Promise<{ amr: string[] } | undefined> {
    const s = await idpRepo.session(this.db, sessionId);
    if (!s || s.user_id !== userId) return undefined;
    const user = await idpRepo.user(this.db, userId);
    return user && !user.blocked ? { amr: s.amr } : undefined;
  }

  /** Ends a sign-in session by its id when it is this user's (logout with an id_token_hint's sid). */
  async endSessionOf(sessionId: string, userId: string): Promise<void> {
    const s = await idpRepo.session(this.db, sessionId);
    if (s && s.user_id === userId) await idpRepo.deleteSession(this.db, sessionId);
  }

  /** Ends a sign-in session by its id (the console's sign-out). */
  async endSessionById(sessionId: string): Promise<void> {
    await idpRepo.deleteSession(this.db, sessionId);
  }

  /** Ends a login session (the cookie's row is deleted: every process forgets it at once). */
  async endSession(cookie: string | undefined): Promise<void> {
    if (cookie) await idpRepo.deleteSession(this.db, hex(cookie));
  }

  /**
   * Logout (OpenID Connect RP-Initiated Logout): where to send the browser afterwards,
   * only to one of the application's Allowed Callback URLs (exact match), with state.
   */
  async logoutRedirect(clientId: string | undefined, uri: string | undefined, state: string | undefined): Promise<string | undefined> {
    if (!clientId || !uri) return undefined;
    const app = await idpRepo.app(this.db, clientId);
    if (!app || !app.callback_urls.includes(uri)) return undefined;
    return state ? appendQuery(uri, { state }) : uri;
  }

  /** The application and user of a valid id_token_hint (logout), if it is one. */
  idTokenHint(hint: string): Promise<VerifiedHint | undefined> {
    return verifyIdTokenHint(this.db, this.keys, this.masterKey, this.issuer, hint);
  }

  /** Issues the code and returns the redirect that carries it (login-as: with the auditing name). */
  /**
   * `how` is recorded in the user's events: `password` (the sign-in form), `signup`, `sso`
   * (an existing sign-in session, no form), or `login_as`; a messenger account-linking
   * flow records `messenger`.
   */
  /** `session` is the sign-in session's cookie value when the code comes from one (not login-as). */
  async issueCode(r: AuthRequest, userId: string, authTime: Date, how: { authType: 'password' | 'signup' | 'sso' | 'social'; secondFactor?: SecondFactor } | { loginAs: { name: string; actor: string } }, session?: string): Promise<string> {
    const loginAs = 'loginAs' in how ? how.loginAs : undefined;
    const code = randomBytes(32).toString('base64url');
    const messenger = r.response_type === 'messenger_code';
    // A messenger code is exchanged with the account-linking URL itself (no query string).
    const boundRedirect = messenger ? baseOf(new URL(r.redirect_uri)) : r.redirect_uri;
    // The code carries its session's methods (amr) to the id_token; a login-as code has no session and no methods.
    const amr = session ? (await idpRepo.session(this.db, hex(session)))?.amr ?? [] : [];
    await idpRepo.insertCode(this.db, {
      code_hash: hex(code), client_id: r.client_id, user_id: userId, redirect_uri: boundRedirect, scope: r.scope,
      nonce: r.nonce ?? null, code_challenge: r.code_challenge ?? null, auth_time: authTime, login_as_name: loginAs?.name ?? null,
      session_id: session ? hex(session) : null, amr,
    }, CODE_TTL_SECONDS);
    await idpRepo.insertEvent(this.db, {
      id: randomUUID(), user_id: userId, type: 'login',
      auth_type: loginAs ? 'login_as' : messenger ? 'messenger' : 'authType' in how ? how.authType : 'password',
      client_id: r.client_id, login_as_profile_id: loginAs?.name ?? null, login_as_actor: loginAs?.actor ?? null, amr,
      second_factor: 'secondFactor' in how ? how.secondFactor ?? null : null,
    });
    if (messenger) return appendQuery(r.redirect_uri, { authorization_code: code });
    return appendQuery(r.redirect_uri, { code, ...(r.state ? { state: r.state } : {}), iss: this.issuer });
  }

  // ---- consent (applications that are not first-party) ----

  /**
   * The scopes of this request the user has not granted the application yet (all of
   * them with prompt=consent); empty for a first-party application, which never asks.
   */
  async consentNeeded(app: AppRow, userId: string, r: AuthRequest): Promise<string[]> {
    if (app.first_party) return [];
    const asked = [...new Set(r.scope.split(' ').filter(Boolean))];
    if (r.prompt?.includes('consent')) return asked;
    const granted = new Set(await idpRepo.consentScopes(this.db, userId, app.client_id));
    return asked.filter((s) => !granted.has(s));
  }

  /** Remembers that the user allowed these scopes to the application (added to what was granted). */
  async grantConsent(userId: string, clientId: string, scope: string): Promise<void> {
    await idpRepo.grantConsent(this.db, userId, clientId, scope.split(' ').filter(Boolean));
  }

  /** The applications the user allowed, with the scopes granted. */
  async consents(userId: string) {
    return idpRepo.consentsOf(this.db, userId);
  }

  /** Withdraws the grant and revokes the application's refresh and access tokens for the user, at once. */
  async revokeConsent(userId: string, clientId: string): Promise<boolean> {
    return this.db.transaction((tx) => idpRepo.revokeConsent(tx, userId, clientId));
  }

  // ---- token side (src/identity/oauth/) ----

  /** grant_type=authorization_code on POST /oauth/token. */
  exchangeCode(headers: Record<string, unknown>, body: Record<string, unknown>) {
    return authorizationCodeGrant({ db: this.db, keys: this.keys, masterKey: this.masterKey, tokens: this.tokens, issuer: this.issuer }, headers, body);
  }

  /** grant_type=password on POST /oauth/token: first-party applications only (grants/password.ts). */
  passwordGrant(headers: Record<string, unknown>, body: Record<string, unknown>, ip: string) {
    return passwordGrant({ db: this.db, keys: this.keys, masterKey: this.masterKey, tokens: this.tokens, issuer: this.issuer, identity: this }, headers, body, ip);
  }

  /** A login of the user's events, for grants that sign in without a code (password). */
  async recordLogin(q: Queryable, userId: string, clientId: string, authType: string, amr?: readonly Amr[]): Promise<void> {
    await idpRepo.insertEvent(q, { id: randomUUID(), user_id: userId, type: 'login', auth_type: authType, client_id: clientId, login_as_profile_id: null, amr: amr ?? null });
  }

  /** grant_type=refresh_token on POST /oauth/token (rotation, reuse detection). */
  refresh(headers: Record<string, unknown>, body: Record<string, unknown>) {
    return refreshTokenGrant({ db: this.db, keys: this.keys, masterKey: this.masterKey, tokens: this.tokens, issuer: this.issuer }, headers, body);
  }

  /** Claim name of the login-as auditing name ({identity_claims_base}/login-as-name). */
  get loginAsClaim(): string {
    return this.tokens.loginAsClaim;
  }

  /** A user's access token (recorded by jti, so that it can be revoked). */
  userAccessToken(userId: string, clientId: string, scope: string, codeHash: string | null, loginAsName: string | null): Promise<string> {
    return this.tokens.issue({ userId, clientId, scope, codeHash, loginAsName });
  }

  async introspect(headers: Record<string, unknown>, body: Record<string, unknown>) {
    return this.tokens.introspect(await authenticateClient(this.db, headers, body), body.token);
  }

  async revoke(headers: Record<string, unknown>, body: Record<string, unknown>): Promise<void> {
    await this.tokens.revoke(await authenticateClient(this.db, headers, body), body.token);
  }

  userinfo(token: string | undefined) {
    return this.tokens.userinfo(token);
  }

  async jwks() {
    return { keys: (await this.keys.published(IDP_ID_TOKEN_KEYS.name)).map((k) => ({ ...k.publicJwk })) };
  }

  async events(userId: string) {
    return idpRepo.events(this.db, userId);
  }
}

export function userView(u: UserRow) {
  return { id: u.id, email: u.email, given_name: u.given_name, family_name: u.family_name, email_verified: u.email_verified, blocked: u.blocked, is_admin: u.is_admin, created_at: u.created_at };
}
