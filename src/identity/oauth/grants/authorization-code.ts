// grant_type=authorization_code (RFC 6749 4.1.3, OpenID Connect Core 3.1.3): the client
// authenticates (Basic, post, or none with PKCE), presents the code, the redirect_uri of
// the authorization request and its PKCE verifier, and gets an access token and an
// id_token. Codes are single-use: the first exchange marks the code used in one row
// update, checks it and records the token in the same transaction; a replay (concurrent
// or later) finds the code used, is refused with invalid_grant and revokes every token
// issued from the code (RFC 9700 4.2.4). A code that fails a check is burnt too.
import { createHash } from 'node:crypto';
import type { Db } from '../../../platform/db/index.ts';
import type { KeyStore } from '../../../platform/crypto/keystore.ts';
import { safeEqual, sha256 } from '../../../platform/crypto/secrets.ts';
import { type AppRow, type CodeRow, type UserRow, idpRepo } from '../../idp/idp.repo.ts';
import { authenticateClient } from '../client-auth.ts';
import { signIdToken } from '../id-token.ts';
import { oauthError } from '../oauth-errors.ts';
import { type RecordedToken, TOKEN_TTL_SECONDS, type UserTokens } from '../user-tokens.ts';
import { OFFLINE_ACCESS, newFamilyId, newRefreshToken } from './refresh-token.ts';

export interface CodeGrantDeps {
  db: Db;
  keys: KeyStore;
  masterKey: Buffer;
  tokens: UserTokens;
  issuer: string;
}

type Outcome =
  | { kind: 'refused'; description: string }
  | { kind: 'replayed' }
  | { kind: 'issued'; code: CodeRow; user: UserRow; token: RecordedToken; refresh?: string | undefined };

const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/; // RFC 7636 4.1

/** Why a first use of this code may not issue tokens, if it may not. */
function refusal(c: CodeRow & { expired: boolean }, app: AppRow, body: Record<string, unknown>): string | undefined {
  if (c.client_id !== app.client_id) return 'The authorization code was issued to another client.';
  if (app.token_endpoint_auth_method === 'none' && !c.code_challenge) return 'A public client must use PKCE.';
  if (c.expired) return 'The authorization code has expired.';
  if (body.redirect_uri !== c.redirect_uri) return 'redirect_uri differs from the one of the authorization request.';
  const verifier = body.code_verifier;
  if (c.code_challenge) {
    if (typeof verifier !== 'string' || !VERIFIER.test(verifier)) return 'code_verifier is missing or malformed (RFC 7636: 43 to 128 characters).';
    if (!safeEqual(createHash('sha256').update(verifier).digest('base64url'), c.code_challenge)) return 'PKCE verification failed.';
  } else if (verifier !== undefined) {
    return 'code_verifier sent for an authorization request without code_challenge.';
  }
  return undefined;
}

export async function authorizationCodeGrant(deps: CodeGrantDeps, headers: Record<string, unknown>, body: Record<string, unknown>) {
  const app = await authenticateClient(deps.db, headers, body);
  if (typeof body.code !== 'string' || body.code === '') throw oauthError('invalid_request', 'code is required.');
  const codeHash = sha256(body.code).toString('hex');

  const outcome = await deps.db.transaction(async (tx): Promise<Outcome> => {
    const used = await idpRepo.useCode(tx, codeHash);
    if (used === 'unknown') return { kind: 'refused', description: 'The authorization code is not valid.' };
    if (used === 'replayed') return { kind: 'replayed' };
    const why = refusal(used, app, body);
    if (why) return { kind: 'refused', description: why };
    const user = await idpRepo.user(tx, used.user_id);
    if (!user || user.blocked) return { kind: 'refused', description: 'The user cannot sign in.' };
    // offline_access: a refresh token, first of a new family (never for login-as).
    const offline = used.scope.split(' ').includes(OFFLINE_ACCESS) && !used.login_as_name;
    const familyId = offline ? newFamilyId() : null;
    const token = await deps.tokens.record(tx, { userId: user.id, clientId: app.client_id, scope: used.scope, codeHash, loginAsName: used.login_as_name, refreshFamily: familyId });
    const refresh = familyId
      ? await newRefreshToken(tx, { familyId, codeHash, clientId: app.client_id, userId: user.id, scope: used.scope, authTime: used.auth_time, amr: used.amr })
      : undefined;
    return { kind: 'issued', code: used, user, token, refresh };
  });

  if (outcome.kind === 'replayed') {
    await idpRepo.revokeTokensOfCode(deps.db, codeHash);
    await idpRepo.revokeFamiliesOfCode(deps.db, codeHash);
    throw oauthError('invalid_grant', 'The authorization code was already used; the tokens issued from it are revoked.');
  }
  if (outcome.kind === 'refused') throw oauthError('invalid_grant', outcome.description);
  const { code, user, token, refresh } = outcome;
  const accessToken = await deps.tokens.sign(token);
  const idToken = await signIdToken({
    issuer: deps.issuer, app, user, scope: code.scope, nonce: code.nonce, authTime: code.auth_time, ttlSeconds: TOKEN_TTL_SECONDS, accessToken, sid: code.session_id, amr: code.amr,
  }, deps.keys, deps.masterKey);
  return {
    access_token: accessToken, token_type: 'Bearer' as const, expires_in: TOKEN_TTL_SECONDS, scope: code.scope, id_token: idToken,
    ...(refresh ? { refresh_token: refresh } : {}),
  };
}
