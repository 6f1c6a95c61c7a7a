// The Management API's rules: tokens for applications granted management scopes
// (client credentials with client_id and secret), users (create, read, update, block),
// their events, and login-as: a first-party client, a whitelisted redirect URL whose
// origin (and the console's) the client allows, and response type code or token.
import { randomUUID } from 'node:crypto';
import type { Db } from '../../platform/db/index.ts';
import type { KeyStore } from '../../platform/crypto/keystore.ts';
import { JwsError, decodeJwt, signJwt, verifyJwt } from '../../platform/crypto/jwt.ts';
import { problems } from '../../platform/http/problem.ts';
import { oauthError } from '../oauth/oauth-errors.ts';
import { idpRepo } from './idp.repo.ts';
import { type IdentityService, appendQuery, userView } from './idp.service.ts';
import { checkAuthMethod, clientCredentials } from '../oauth/client-auth.ts';
import { IDP_ACCESS_TOKEN_KEYS, TOKEN_TTL_SECONDS } from '../oauth/user-tokens.ts';
import { safeEqual, sha256 } from '../../platform/crypto/secrets.ts';
import { hashPassword } from './passwords.ts';
import { type Caller, assertReachesUser } from './authority.ts';

export { MANAGEMENT_SCOPES } from './authority.ts';

export interface LoginAsInput {
  userId: string;
  /** Dynamic configuration; without it, the global one (PAYD_IDENTITY_LOGIN_AS_*). */
  clientId?: string | undefined;
  redirectUri?: string | undefined;
  responseType?: 'code' | 'token' | undefined;
  /** The auditing name (Management API `name`, or the console user's email). */
  name: string;
  /**
   * Who does it, from their credentials: a Management API caller (whose scopes decide
   * whether it reaches the user) or a console administrator (who reaches everyone).
   */
  by: { caller: Caller } | { consoleUser: string };
}

export class ManagementService {
  readonly audience: string;

  constructor(
    private readonly db: Db,
    private readonly keys: KeyStore,
    private readonly identity: IdentityService,
    private readonly issuer: string,
    private readonly consoleOrigin: string,
    /** Global login-as configuration (spec: "global or dynamic"), used when a call names no client. */
    private readonly loginAsDefaults: { clientId?: string | undefined; redirectUri?: string | undefined; responseType: 'code' | 'token' } = { responseType: 'code' },
  ) {
    this.audience = `${issuer}/api/v2/`;
  }

  /** grant_type=client_credentials with client_id/client_secret (Basic or post): a management token. */
  async token(headers: Record<string, unknown>, body: Record<string, unknown>) {
    const { id, secret, via } = clientCredentials(headers, body);
    const app = id ? await idpRepo.app(this.db, id) : undefined;
    const hash = secret ? sha256(secret).toString('hex') : '';
    if (app) checkAuthMethod(app, via, secret);
    if (!app || !app.secret_hash || !safeEqual(hash, app.secret_hash)) throw oauthError('invalid_client', 'Client authentication failed.');
    if (app.management_scopes.length === 0) throw oauthError('unauthorized_client', 'This application has no Management API scopes.');
    const asked = typeof body.scope === 'string' && body.scope ? body.scope.split(' ') : app.management_scopes;
    if (!asked.every((s) => app.management_scopes.includes(s))) throw oauthError('invalid_scope', 'A requested scope is not granted to this application.');
    const key = await this.keys.signingKey(IDP_ACCESS_TOKEN_KEYS.name);
    const now = Math.floor(Date.now() / 1000);
    const token = await signJwt('HS256', { kid: key.kid, typ: 'at+jwt' }, {
      iss: this.issuer, sub: `${app.client_id}@clients`, aud: this.audience, client_id: app.client_id, scope: asked.join(' '),
      iat: now, exp: now + TOKEN_TTL_SECONDS, jti: randomUUID(), gen: app.tokens_generation,
    }, key.privateKey);
    return { access_token: token, token_type: 'Bearer' as const, expires_in: TOKEN_TTL_SECONDS, scope: asked.join(' ') };
  }

  /**
   * The Management API caller behind a valid token holding `scope`: its client id and the
   * scopes its token holds that its application still holds. 401 when the token is not
   * one (or was revoked), 403 without the scope.
   */
  async authorize(authorization: string | undefined, scope: string): Promise<Caller> {
    const challenge = `Bearer realm="payd-management", scope="${scope}"`;
    if (!authorization?.startsWith('Bearer ')) throw problems.unauthorized('A Management API token is required.', challenge);
    let payload: Record<string, unknown>;
    try {
      const decoded = decodeJwt(authorization.slice(7));
      const key = await this.keys.verificationKey(IDP_ACCESS_TOKEN_KEYS.name, String(decoded.header.kid ?? ''));
      if (!key) throw new JwsError('unknown key');
      payload = await verifyJwt('HS256', authorization.slice(7), key.publicKey, { issuer: this.issuer, audience: this.audience, typ: 'at+jwt' });
    } catch {
      throw problems.unauthorized('The Management API token is not valid.', `${challenge}, error="invalid_token"`);
    }
    if (!String(payload.scope ?? '').split(' ').includes(scope)) throw problems.forbidden(`This token lacks the scope ${scope}.`);
    // The application behind the token must still hold the scope (an operator may withdraw it).
    const app = await idpRepo.app(this.db, String(payload.client_id));
    if (!app) throw problems.unauthorized('The application behind this token no longer exists.', `${challenge}, error="invalid_token"`);
    if (!app.management_scopes.includes(scope)) throw problems.forbidden(`The application behind this token no longer holds the scope ${scope}.`);
    // Tokens issued before a revocation (POST /api/v2/clients/{id}/revoke-tokens) are refused:
    // a token carries the generation it was issued in. (A token from before generations,
    // which has none, is compared by its iat.)
    const revoked = typeof payload.gen === 'number'
      ? payload.gen < app.tokens_generation
      : app.tokens_not_before !== null && Number(payload.iat ?? 0) * 1000 < app.tokens_not_before.getTime();
    if (revoked) throw problems.unauthorized('This Management API token was revoked.', `${challenge}, error="invalid_token"`);
    const held = String(payload.scope ?? '').split(' ').filter((s) => app.management_scopes.includes(s));
    return { clientId: app.client_id, scopes: new Set(held) };
  }

  async users(limit = 50, email?: string) {
    if (email !== undefined) {
      const u = await idpRepo.userByEmail(this.db, email);
      return u ? [userView(u)] : [];
    }
    return (await idpRepo.users(this.db, limit)).map(userView);
  }

  async user(id: string) {
    const u = await idpRepo.user(this.db, id);
    if (!u) throw problems.notFound('No such user.');
    return userView(u);
  }

  /**
   * A new password or a block ends every sign-in session of the user and revokes their
   * refresh and access tokens, in the same transaction: whoever held the old password (or
   * a session opened with it) is out at once. `is_admin` grants or withdraws console
   * administration; withdrawing it from, or blocking, the last active (not blocked)
   * administrator is refused (409): nobody could use the console any more. The
   * administrators are locked first, so two concurrent withdrawals cannot both pass.
   */
  async updateUser(id: string, patch: { given_name?: string; family_name?: string; email_verified?: boolean; blocked?: boolean; password?: string; is_admin?: boolean }, caller: Caller) {
    // Console administration is a separate scope: update:users alone cannot make an administrator.
    if (patch.is_admin !== undefined && !caller.scopes.has('update:admins')) throw problems.forbidden('Granting or withdrawing is_admin needs the scope update:admins.');
    const passwordHash = patch.password ? await hashPassword(patch.password) : undefined;
    const u = await this.db.transaction(async (tx) => {
      // The administrators first (in id order, as every withdrawal does), then the user.
      const admins = patch.is_admin === false || patch.blocked === true ? await idpRepo.lockActiveAdmins(tx) : undefined;
      // Whom the caller reaches (authority.ts); the user's row stays locked until the write.
      const standing = await idpRepo.lockStanding(tx, id);
      if (!standing) return undefined;
      assertReachesUser(caller, standing, 'change');
      if (admins && admins.length === 1 && admins[0] === id) {
        throw problems.conflict(patch.is_admin === false
          ? 'This user is the last administrator: make another user an administrator first.'
          : 'This user is the last administrator and cannot be blocked: make another user an administrator first.');
      }
      const row = await idpRepo.updateUser(tx, id, { ...patch, password_hash: passwordHash });
      if (row && (passwordHash || patch.blocked === true)) await idpRepo.endCredentials(tx, id);
      return row;
    });
    if (!u) throw problems.notFound('No such user.');
    return userView(u);
  }

  async events(id: string) {
    await this.user(id);
    return this.identity.events(id);
  }

  /** Login as a user: the URL that completes it (credentials in its query string). */
  async loginAs(input: LoginAsInput): Promise<{ redirect_url: string }> {
    const user = await idpRepo.user(this.db, input.userId);
    if (!user) throw problems.notFound('No such user.');
    if ('caller' in input.by) {
      const standing = await idpRepo.lockStanding(this.db, user.id);
      if (standing) assertReachesUser(input.by.caller, standing, 'log in as');
    }
    const actor = 'caller' in input.by ? `application:${input.by.caller.clientId}` : `user:${input.by.consoleUser}`;
    if (user.blocked) throw problems.refused('user-blocked', 'User blocked', 'A blocked user cannot be logged in as.');
    const refuse = (name: string, reason: string) => problems.invalidField(name, reason, 'query');
    const clientId = input.clientId ?? this.loginAsDefaults.clientId;
    const redirectUri = input.redirectUri ?? (input.clientId ? undefined : this.loginAsDefaults.redirectUri);
    const responseType = input.responseType ?? this.loginAsDefaults.responseType;
    if (!clientId) throw refuse('client_id', 'is required (no global login-as configuration: PAYD_IDENTITY_LOGIN_AS_CLIENT_ID)');
    if (!redirectUri) throw refuse('redirect_uri', 'is required with client_id (the global redirect URL goes with the global client only)');
    const app = await idpRepo.app(this.db, clientId);
    if (!app) throw refuse('client_id', 'no such application');
    if (!app.first_party) throw refuse('client_id', 'login-as needs a first-party application');
    if (!app.callback_urls.includes(redirectUri)) throw refuse('redirect_uri', 'is not one of the Allowed Callback URLs of the application');
    const origin = new URL(redirectUri).origin;
    if (!app.allowed_origins.includes(origin)) throw refuse('redirect_uri', `the application's Allowed Origins lack ${origin}`);
    if (!app.allowed_origins.includes(this.consoleOrigin)) throw refuse('client_id', `the application's Allowed Origins lack the console origin ${this.consoleOrigin}`);
    const request = { client_id: app.client_id, redirect_uri: redirectUri, response_type: 'code', scope: 'openid profile email', state: '' };
    if (responseType === 'code') {
      if (!app.response_types.includes('code')) throw refuse('response_type', 'code is not allowed for this application');
      if (app.token_endpoint_auth_method === 'none') {
        throw refuse('response_type', 'a public client exchanges codes only with PKCE, which login-as cannot carry: use token, or a confidential client');
      }
      return { redirect_url: await this.identity.issueCode(request, user.id, new Date(), { loginAs: { name: input.name, actor } }) };
    }
    if (!app.response_types.includes('token')) throw refuse('response_type', 'token is not allowed for this application');
    const token = await this.identity.userAccessToken(user.id, app.client_id, request.scope, null, input.name);
    await idpRepo.insertEvent(this.db, { id: randomUUID(), user_id: user.id, type: 'login', auth_type: 'login_as', client_id: app.client_id, login_as_profile_id: input.name, login_as_actor: actor });
    const url = appendQuery(redirectUri, { access_token: token, token_type: 'Bearer', expires_in: String(TOKEN_TTL_SECONDS) });
    return { redirect_url: url };
  }
}
