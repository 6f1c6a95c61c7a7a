// Access tokens of users (authorization code, login-as): HS256 JWTs signed with a key of
// the key store (purpose idp-access-token), audience the client. Each one's jti is
// recorded, so that revocation (RFC 7009) and a replayed code can revoke it; /userinfo
// and introspection (RFC 7662) check that row, and that the user is not blocked.
import { nameClaims } from './claims.ts';
import { randomUUID } from 'node:crypto';
import type { Db, Queryable } from '../../platform/db/index.ts';
import type { KeyPurpose, KeyStore } from '../../platform/crypto/keystore.ts';
import { decodeJwt, signJwt, verifyJwt } from '../../platform/crypto/jwt.ts';
import { problems } from '../../platform/http/problem.ts';
import { sha256 } from '../../platform/crypto/secrets.ts';
import { type AppRow, idpRepo } from '../idp/idp.repo.ts';

/** A 401 of /userinfo (RFC 6750 3.1): the challenge carries the error; the body too. */
function bearerError(description: string, challenge: string) {
  const p = problems.unauthorized(description, challenge);
  p.extra.error = 'invalid_token';
  p.extra.error_description = description;
  return p;
}

export const IDP_ACCESS_TOKEN_KEYS: KeyPurpose = { name: 'idp-access-token', alg: 'HS256', overlapSeconds: 2 * 86400 };
export const TOKEN_TTL_SECONDS = 3600;

export interface UserTokenInput {
  userId: string;
  clientId: string;
  scope: string;
  /** The code it was issued from (revoked with it when the code is replayed). */
  codeHash: string | null;
  /** Login-as: the auditing name, carried as {identity_claims_base}/login-as-name. */
  loginAsName: string | null;
  /** The refresh-token family it was issued in (revoked with it). */
  refreshFamily?: string | null;
}

export type RecordedToken = UserTokenInput & { jti: string };

export class UserTokens {
  constructor(
    private readonly db: Db,
    private readonly keys: KeyStore,
    private readonly issuer: string,
    /** Claim name of the login-as auditing name. */
    readonly loginAsClaim: string,
  ) {}

  /** Records the token (in the caller's transaction when given one); sign it with sign(). */
  async record(q: Queryable, t: UserTokenInput): Promise<RecordedToken> {
    const jti = randomUUID();
    await idpRepo.insertToken(q, { jti, code_hash: t.codeHash, client_id: t.clientId, user_id: t.userId, ttlSeconds: TOKEN_TTL_SECONDS, login_as_name: t.loginAsName, refresh_family: t.refreshFamily ?? null });
    return { ...t, jti };
  }

  async sign(t: RecordedToken): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    const key = await this.keys.signingKey(IDP_ACCESS_TOKEN_KEYS.name);
    return signJwt('HS256', { kid: key.kid, typ: 'at+jwt' }, {
      iss: this.issuer, sub: t.userId, aud: t.clientId, client_id: t.clientId, scope: t.scope, iat: now, exp: now + TOKEN_TTL_SECONDS, jti: t.jti,
      ...(t.loginAsName ? { [this.loginAsClaim]: t.loginAsName } : {}),
    }, key.privateKey);
  }

  async issue(t: UserTokenInput): Promise<string> {
    return this.sign(await this.record(this.db, t));
  }

  /** The claims of a user access token issued here, if it is still active (not revoked, user not blocked). */
  async active(token: string): Promise<Record<string, unknown> | undefined> {
    let claims: Record<string, unknown>;
    try {
      const decoded = decodeJwt(token);
      const key = await this.keys.verificationKey(IDP_ACCESS_TOKEN_KEYS.name, typeof decoded.header.kid === 'string' ? decoded.header.kid : '');
      if (!key) return undefined;
      // aud is the client of a user token, the Management API for a management token:
      // only a recorded jti (below) makes it a user token.
      claims = await verifyJwt('HS256', token, key.publicKey, { issuer: this.issuer, audience: String(decoded.payload.aud), typ: 'at+jwt' });
    } catch {
      return undefined;
    }
    const jti = typeof claims.jti === 'string' && /^[0-9a-f-]{36}$/i.test(claims.jti) ? claims.jti : undefined;
    return jti && (await idpRepo.tokenActive(this.db, jti)) ? claims : undefined;
  }

  /** RFC 7662: a client learns about its own tokens only; anything else is inactive. */
  async introspect(app: AppRow, token: unknown) {
    const claims = typeof token === 'string' ? await this.active(token) : undefined;
    if (!claims || claims.client_id !== app.client_id) return { active: false };
    return {
      active: true, token_type: 'Bearer', scope: claims.scope, client_id: claims.client_id, sub: claims.sub, aud: claims.aud,
      iss: claims.iss, exp: claims.exp, iat: claims.iat, jti: claims.jti,
      ...(claims[this.loginAsClaim] ? { [this.loginAsClaim]: claims[this.loginAsClaim] } : {}),
    };
  }

  /** RFC 7009: revokes a token of the calling client; answers the same whatever the token. */
  async revoke(app: AppRow, token: unknown): Promise<void> {
    if (typeof token !== 'string') return;
    const claims = await this.active(token);
    if (claims && claims.client_id === app.client_id) await idpRepo.revokeToken(this.db, String(claims.jti), app.client_id);
    if (claims) return;
    // A refresh token: its whole family goes (RFC 7009 2.1 allows revoking related tokens).
    const refresh = await idpRepo.refreshToken(this.db, sha256(token).toString('hex'));
    if (refresh && refresh.client_id === app.client_id) await idpRepo.revokeFamily(this.db, refresh.family_id);
  }

  /** /userinfo: the claims of the user behind an active access token. */
  async userinfo(token: string | undefined) {
    if (!token) throw bearerError('An access token is required.', 'Bearer realm="payd-identity"');
    const claims = await this.active(token);
    const user = claims ? await idpRepo.user(this.db, String(claims.sub)) : undefined;
    if (!claims || !user || user.blocked) throw bearerError('The access token is not valid.', 'Bearer realm="payd-identity", error="invalid_token", error_description="The access token is not valid."');
    const scopes = String(claims.scope).split(' ');
    return {
      sub: user.id,
      ...(scopes.includes('profile') ? nameClaims(user) : {}),
      ...(scopes.includes('email') ? { email: user.email, email_verified: user.email_verified } : {}),
    };
  }
}
