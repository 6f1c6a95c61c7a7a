// id_token_hint of RP-Initiated Logout (OpenID Connect RP-Initiated Logout 1.0, 2): an
// id_token this provider issued, proof that the logout request comes from the relying
// party it names. Its signature (HS256 with the client secret, or RS256 with a published
// provider key) and issuer are checked; expiry is not (the spec allows expired hints).
import { type KeyObject, createSecretKey } from 'node:crypto';
import { compactVerify } from 'jose';
import type { Queryable } from '../../platform/db/index.ts';
import type { KeyStore } from '../../platform/crypto/keystore.ts';
import { decrypt } from '../../platform/crypto/secrets.ts';
import { decodeJwt } from '../../platform/crypto/jwt.ts';
import { type AppRow, idpRepo } from '../idp/idp.repo.ts';
import { IDP_ID_TOKEN_KEYS, clientSecretAad } from './id-token.ts';

export interface VerifiedHint {
  app: AppRow;
  /** The user the id_token was issued for. */
  sub: string;
  /** The sign-in session it came from (its sid claim), when it has one. */
  sid?: string;
}

/** The application and user of a valid id_token_hint, or undefined when it is not one. */
export async function verifyIdTokenHint(db: Queryable, keys: KeyStore, masterKey: Buffer, issuer: string, hint: string): Promise<VerifiedHint | undefined> {
  let decoded;
  try {
    decoded = decodeJwt(hint);
  } catch {
    return undefined;
  }
  const { header, payload } = decoded;
  const aud = payload.aud;
  const clientId = typeof aud === 'string' ? aud : Array.isArray(aud) && aud.length === 1 && typeof aud[0] === 'string' ? aud[0] : undefined;
  if (!clientId || clientId.length > 100 || payload.iss !== issuer || typeof payload.sub !== 'string') return undefined;
  const app = await idpRepo.app(db, clientId);
  if (!app) return undefined;
  let key: KeyObject | undefined;
  if (header.alg === 'HS256' && app.secret_enc && app.id_token_alg === 'HS256') {
    key = createSecretKey(Buffer.from(decrypt(masterKey, app.secret_enc, clientSecretAad(app.client_id)), 'utf8'));
  } else if (header.alg === 'RS256' && typeof header.kid === 'string') {
    key = (await keys.verificationKey(IDP_ID_TOKEN_KEYS.name, header.kid))?.publicKey;
  }
  if (!key) return undefined;
  try {
    await compactVerify(hint, key, { algorithms: [header.alg as string] });
  } catch {
    return undefined;
  }
  return { app, sub: payload.sub, ...(typeof payload.sid === 'string' && payload.sid.length <= 128 ? { sid: payload.sid } : {}) };
}
