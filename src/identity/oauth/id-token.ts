// The id_token: claims of the user for one client, signed HS256 with the client secret
// (the spec: "libraries verify it with the client secret") or RS256 with the provider's
// key (purpose idp-id-token, published at /.well-known/jwks.json) for applications that
// ask for it and for public clients, which have no secret.
import { nameClaims } from './claims.ts';
import { createHash, createSecretKey } from 'node:crypto';
import { SignJWT } from 'jose';
import type { KeyPurpose, KeyStore } from '../../platform/crypto/keystore.ts';
import { decrypt } from '../../platform/crypto/secrets.ts';
import type { AppRow, UserRow } from '../idp/idp.repo.ts';

export const IDP_ID_TOKEN_KEYS: KeyPurpose = { name: 'idp-id-token', alg: 'RS256', overlapSeconds: 2 * 86400 };

/** Associated data of a client secret encrypted by the master key (binds it to its client). */
export const clientSecretAad = (clientId: string) => `idp-client:${clientId}`;

export interface IdTokenInput {
  issuer: string;
  app: AppRow;
  user: UserRow;
  scope: string;
  nonce: string | null;
  authTime: Date;
  ttlSeconds: number;
  /** The access token issued with it: its at_hash (OpenID Connect Core 3.1.3.6). */
  accessToken?: string | undefined;
  /** The sign-in session's id (sid), when the tokens come from one (not the password or refresh grants). */
  sid?: string | null | undefined;
  /** How the user signed in (RFC 8176); left out when not known (login-as, the password grant gives ['pwd']). */
  amr?: readonly string[] | undefined;
}

/** at_hash: the left half of the SHA-256 of the access token, base64url (both algorithms, HS256 and RS256, are SHA-256). */
export const atHash = (accessToken: string) => createHash('sha256').update(accessToken, 'ascii').digest().subarray(0, 16).toString('base64url');

export function idTokenClaims(i: IdTokenInput): Record<string, unknown> {
  const now = Math.floor(Date.now() / 1000);
  const scopes = i.scope.split(' ');
  return {
    iss: i.issuer, sub: i.user.id, aud: i.app.client_id, azp: i.app.client_id, iat: now, exp: now + i.ttlSeconds, auth_time: Math.floor(i.authTime.getTime() / 1000),
    ...(i.nonce ? { nonce: i.nonce } : {}),
    ...(i.accessToken ? { at_hash: atHash(i.accessToken) } : {}),
    ...(i.sid ? { sid: i.sid } : {}),
    ...(i.amr?.length ? { amr: [...i.amr] } : {}),
    ...(scopes.includes('profile') ? nameClaims(i.user) : {}),
    ...(scopes.includes('email') ? { email: i.user.email, email_verified: i.user.email_verified } : {}),
  };
}

export async function signIdToken(i: IdTokenInput, keys: KeyStore, masterKey: Buffer): Promise<string> {
  const claims = idTokenClaims(i);
  if (i.app.secret_enc && i.app.id_token_alg === 'HS256') {
    const secret = decrypt(masterKey, i.app.secret_enc, clientSecretAad(i.app.client_id));
    return new SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(createSecretKey(Buffer.from(secret, 'utf8')));
  }
  const rsa = await keys.signingKey(IDP_ID_TOKEN_KEYS.name);
  return new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: rsa.kid, typ: 'JWT' }).sign(rsa.privateKey);
}
