// Refresh tokens (scope offline_access; RFC 6749 6, RFC 9700 4.14.2): opaque random
// values stored hashed, rotated on every use. A token is marked used in one row update,
// so of two concurrent uses one wins; a used (or revoked) token presented again means it
// was stolen or replayed: its whole family (every refresh token descended from the same
// authorization code and the access tokens issued in it) is revoked.
import { randomBytes, randomUUID } from 'node:crypto';
import type { Db, Queryable } from '../../../platform/db/index.ts';
import { sha256 } from '../../../platform/crypto/secrets.ts';
import { type AppRow, type RefreshRow, type UserRow, idpRepo } from '../../idp/idp.repo.ts';
import { authenticateClient } from '../client-auth.ts';
import { signIdToken } from '../id-token.ts';
import { oauthError } from '../oauth-errors.ts';
import { type RecordedToken, TOKEN_TTL_SECONDS } from '../user-tokens.ts';
import type { CodeGrantDeps } from './authorization-code.ts';

export const REFRESH_TTL_SECONDS = 30 * 86400;
/** A refresh token presented again this soon after its use, by its client, is answered again (a lost answer), not taken as reuse. */
export const REFRESH_REUSE_GRACE_SECONDS = 10;
export const OFFLINE_ACCESS = 'offline_access';

const hex = (s: string) => sha256(s).toString('hex');

/** Records a new refresh token of a family (a new family when none is given); returns its value. */
export async function newRefreshToken(q: Queryable, r: { familyId: string; codeHash: string | null; clientId: string; userId: string; scope: string; authTime: Date; amr: readonly string[] }): Promise<string> {
  const value = randomBytes(32).toString('base64url');
  await idpRepo.insertRefreshToken(q, {
    token_hash: hex(value), family_id: r.familyId, code_hash: r.codeHash, client_id: r.clientId, user_id: r.userId, scope: r.scope, auth_time: r.authTime, amr: [...r.amr],
  }, REFRESH_TTL_SECONDS);
  return value;
}

export const newFamilyId = () => randomUUID();

type Outcome =
  | { kind: 'reused'; familyId?: string }
  | { kind: 'issued'; app: AppRow; user: UserRow; scope: string; authTime: Date; amr: string[]; token: RecordedToken; refresh: string };

export async function refreshTokenGrant(deps: CodeGrantDeps, headers: Record<string, unknown>, body: Record<string, unknown>) {
  const app = await authenticateClient(deps.db, headers, body);
  if (typeof body.refresh_token !== 'string' || body.refresh_token === '') throw oauthError('invalid_request', 'refresh_token is required.');
  const tokenHash = hex(body.refresh_token);
  const db: Db = deps.db;
  // A refusal throws inside the transaction, which rolls back: the token is not burnt.
  const outcome = await db.transaction(async (tx): Promise<Outcome> => {
    const used = await idpRepo.useRefreshToken(tx, tokenHash);
    if (used === 'unknown') throw oauthError('invalid_grant', 'The refresh token is not valid.');
    let row: RefreshRow;
    if (used === 'reused') {
      // A client that lost the answer to its refresh (a dropped connection) presents the same
      // token again: within REFRESH_REUSE_GRACE_SECONDS it gets new tokens, and the successor
      // issued the first time is revoked, so the family still has one live refresh token (the
      // other holder, if the token was stolen, sets off reuse detection with it). Later, or
      // from another client, it is reuse.
      const again = await idpRepo.lockRecentlyUsedRefresh(tx, tokenHash, REFRESH_REUSE_GRACE_SECONDS);
      if (again && again.client_id === app.client_id && again.in_grace) {
        await idpRepo.revokeUnusedOfFamily(tx, again.family_id);
        row = again;
      } else {
        const known = again ?? await idpRepo.refreshToken(tx, tokenHash);
        // Only the client it was issued to can set off reuse detection.
        if (known && known.client_id !== app.client_id) throw oauthError('invalid_grant', 'The refresh token is not valid.');
        return { kind: 'reused', ...(known ? { familyId: known.family_id } : {}) };
      }
    } else {
      if (used.expired) throw oauthError('invalid_grant', 'The refresh token has expired.');
      row = used;
    }
    if (row.client_id !== app.client_id) throw oauthError('invalid_grant', 'The refresh token was issued to another client.');
    const user = await idpRepo.user(tx, row.user_id);
    if (!user || user.blocked) throw oauthError('invalid_grant', 'The user cannot sign in.');
    // RFC 6749 6: a narrower scope may be asked for, never a wider one.
    let scope = row.scope;
    if (typeof body.scope === 'string' && body.scope !== '') {
      const asked = body.scope.split(' ').filter(Boolean);
      const granted = row.scope.split(' ');
      if (!asked.every((s) => granted.includes(s))) throw oauthError('invalid_scope', 'scope exceeds the scope originally granted.');
      scope = asked.join(' ');
    }
    const token = await deps.tokens.record(tx, { userId: user.id, clientId: app.client_id, scope, codeHash: null, loginAsName: null, refreshFamily: row.family_id });
    // The family keeps the originally granted scope, so that a narrower request does not narrow later ones.
    const refresh = await newRefreshToken(tx, { familyId: row.family_id, codeHash: row.code_hash, clientId: app.client_id, userId: user.id, scope: row.scope, authTime: row.auth_time, amr: row.amr });
    return { kind: 'issued', app, user, scope, authTime: row.auth_time, amr: row.amr, token, refresh };
  });
  if (outcome.kind === 'reused') {
    if (outcome.familyId) await idpRepo.revokeFamily(deps.db, outcome.familyId);
    throw oauthError('invalid_grant', 'The refresh token was already used; every token of its family is revoked.');
  }
  const { user, scope, authTime, amr, token, refresh } = outcome;
  const accessToken = await deps.tokens.sign(token);
  const idToken = scope.split(' ').includes('openid')
    ? await signIdToken({ issuer: deps.issuer, app, user, scope, nonce: null, authTime, amr, ttlSeconds: TOKEN_TTL_SECONDS, accessToken }, deps.keys, deps.masterKey)
    : undefined;
  return {
    access_token: accessToken, token_type: 'Bearer' as const, expires_in: TOKEN_TTL_SECONDS, scope, refresh_token: refresh,
    ...(idToken ? { id_token: idToken } : {}),
  };
}
