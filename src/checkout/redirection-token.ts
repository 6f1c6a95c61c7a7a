// The signed `service-redirection-data` token that the shopper carries back to the
// merchant's shopper_redirection_url: an RS256 JWS whose keys GET /v2/signing-jwks
// publishes. The merchant verifies it with any JOSE library (see docs/checkout.md).
import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import type { KeyPurpose, KeyStore } from '../platform/crypto/keystore.ts';

export const REDIRECTION_KEYS: KeyPurpose = { name: 'redirection', alg: 'RS256', overlapSeconds: 30 * 86400 };
export const REDIRECTION_TOKEN_TYPE = 'JWT';
export const REDIRECTION_TOKEN_TTL_SECONDS = 3600;

export interface RedirectionClaims {
  client_session_id: string;
  payment_id: string | null;
  authorization_status: string | null;
  client_session_status: string;
  [claim: string]: unknown;
}

export class RedirectionTokens {
  constructor(
    private readonly keys: KeyStore,
    private readonly issuer: string,
  ) {}

  /** Signs the claims for one merchant entity (the audience), valid for an hour. */
  async sign(entityId: string, claims: RedirectionClaims, ttlSeconds = REDIRECTION_TOKEN_TTL_SECONDS): Promise<string> {
    const key = await this.keys.signingKey(REDIRECTION_KEYS.name);
    return new SignJWT(claims)
      .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: REDIRECTION_TOKEN_TYPE })
      .setIssuer(this.issuer)
      .setAudience(entityId)
      .setIssuedAt()
      .setExpirationTime(`${ttlSeconds}s`)
      .setJti(randomUUID())
      .sign(key.privateKey);
  }

  /** The public keys (JWKS) that verify redirection tokens, current and recently rotated. */
  async jwks(): Promise<{ keys: Array<Record<string, unknown>> }> {
    const published = await this.keys.published(REDIRECTION_KEYS.name);
    return { keys: published.map((k) => ({ ...k.publicJwk })) };
  }
}
