// grant_type=password (RFC 6749 4.3; the identity SDK's loginWithPassword in Cordova and
// loginWithCredentials): the user's email and password straight to the token endpoint.
// Deprecated by OAuth 2.1 because it hands the password to the client, so it is allowed
// to first-party applications only (marked first_party by the operator: the provider's
// own apps, which show their own sign-in form anyway), and it passes through the same
// sign-in throttle as the hosted form. Tokens as the authorization_code grant gives them
// (an id_token, an access token, a refresh token with offline_access).
import type { Queryable } from '../../../platform/db/index.ts';
import { isProblem, Problem, PROBLEM_TYPE } from '../../../platform/http/problem.ts';
import type { IdentityService } from '../../idp/idp.service.ts';
import { authenticateClient } from '../client-auth.ts';
import { signIdToken } from '../id-token.ts';
import { oauthError } from '../oauth-errors.ts';
import { TOKEN_TTL_SECONDS } from '../user-tokens.ts';
import { OFFLINE_ACCESS, newFamilyId, newRefreshToken } from './refresh-token.ts';
import type { CodeGrantDeps } from './authorization-code.ts';
import { Mfa } from '../../mfa/mfa.ts';
import { passwordGrantRepo } from './password.repo.ts';

/** Whether the operator enabled the password grant for this application (grant_types with password). */
export async function passwordGrantEnabled(q: Queryable, clientId: string): Promise<boolean> {
  return passwordGrantRepo.enabled(q, clientId);
}

/** Enables the password grant for an application (at registration, grant_types with password). */
export async function enablePasswordGrant(q: Queryable, clientId: string): Promise<void> {
  await passwordGrantRepo.enable(q, clientId);
}

const SCOPES = new Set(['openid', 'profile', 'email', 'phone', 'offline_access']);

export async function passwordGrant(deps: CodeGrantDeps & { identity: IdentityService }, headers: Record<string, unknown>, body: Record<string, unknown>, ip: string) {
  const app = await authenticateClient(deps.db, headers, body);
  // RFC 9700 2.4: never for a public client; otherwise only for a first-party application
  // the operator registered with grant_types including password (off by default).
  if (app.token_endpoint_auth_method === 'none') throw oauthError('unauthorized_client', 'The password grant is not available to public clients; use the authorization code flow with PKCE.');
  if (!app.first_party) throw oauthError('unauthorized_client', 'The password grant is for first-party applications only; use the authorization code flow.');
  if (!(await passwordGrantEnabled(deps.db, app.client_id))) {
    throw oauthError('unauthorized_client', 'The password grant is not enabled for this application (grant_types must include password); use the authorization code flow.');
  }
  const username = typeof body.username === 'string' ? body.username : '';
  const password = typeof body.password === 'string' ? body.password : '';
  if (!username || !password || password.length > 256) throw oauthError('invalid_request', 'username and password are required.');
  const requested = (typeof body.scope === 'string' && body.scope.trim() ? body.scope.trim() : 'openid profile email').split(/\s+/);
  if (!requested.every((s) => SCOPES.has(s))) throw oauthError('invalid_scope', 'scope may be openid, profile, email, phone and offline_access.');
  const scope = [...new Set(requested.includes('openid') ? requested : ['openid', ...requested])].join(' ');
  let user;
  try {
    user = await deps.identity.login(username, password, ip);
  } catch (err) {
    if (isProblem(err, PROBLEM_TYPE.unauthorized)) throw oauthError('invalid_grant', 'Invalid email or password.');
    if (isProblem(err, PROBLEM_TYPE.tooManyRequests)) {
      const p = oauthError('invalid_grant', err.detail ?? 'Too many failed sign-in attempts.');
      throw new Problem({ status: 429, type: p.type, title: p.title, detail: p.detail, extra: { ...p.extra, error: 'too_many_attempts' }, headers: { ...p.headers, ...err.headers } });
    }
    throw err;
  }
  // The password alone is not enough for a user with a second factor: the hosted sign-in asks it.
  if (await new Mfa(deps.db, deps.masterKey, '').hasFactor(user.id)) {
    throw oauthError('invalid_grant', 'This account has a second factor: the password grant cannot sign it in. Use the authorization code flow (the hosted sign-in page asks the second factor).');
  }
  const authTime = new Date();
  const offline = requested.includes(OFFLINE_ACCESS);
  const { token, refresh } = await deps.db.transaction(async (tx) => {
    const familyId = offline ? newFamilyId() : null;
    const t = await deps.tokens.record(tx, { userId: user.id, clientId: app.client_id, scope, codeHash: null, loginAsName: null, refreshFamily: familyId });
    const r = familyId ? await newRefreshToken(tx, { familyId, codeHash: null, clientId: app.client_id, userId: user.id, scope, authTime, amr: ['pwd'] }) : undefined;
    await deps.identity.recordLogin(tx, user.id, app.client_id, 'password', ['pwd']);
    return { token: t, refresh: r };
  });
  const accessToken = await deps.tokens.sign(token);
  const idToken = await signIdToken({ issuer: deps.issuer, app, user, scope, nonce: null, authTime, amr: ['pwd'], ttlSeconds: TOKEN_TTL_SECONDS, accessToken }, deps.keys, deps.masterKey);
  return {
    access_token: accessToken, token_type: 'Bearer' as const, expires_in: TOKEN_TTL_SECONDS, scope, id_token: idToken,
    ...(refresh ? { refresh_token: refresh } : {}),
  };
}
