// Access tokens of the payment API: short JWTs signed HS256 with a secret from the key
// store (encrypted at rest by the master key, rotated like the other keys), by jose
// (platform/crypto/jwt.ts). Only payd issues and verifies them, and every process that
// verifies also signs, so an asymmetric key would protect nothing more. Any payd process
// verifies them with its cached keys, no database round trip. Tokens of a revoked API key
// are refused at once in the process that revoked it, and in the others on NOTIFY. A
// token already verified is remembered until it expires (bounded, least recently used
// first out, keyed by the token's SHA-256): the signature and claims are checked once
// per token and process, the key and the revocation on every request.
import { hash, randomUUID } from 'node:crypto';
import { JwsError, decodeJwt, signJwt, verifyJwt } from '../../platform/crypto/jwt.ts';
import type { KeyPurpose, KeyStore } from '../../platform/crypto/keystore.ts';
import { InvalidCredentials, type Principal } from '../../platform/http/auth.ts';

export const PAYMENT_API_SCOPE = 'payment-api';
export const ACCESS_TOKEN_AUDIENCE = 'payd';
const TOKEN_TYPE = 'at+jwt';

// (The purpose was 'access-token' with EdDSA keys before 0.1.0; a new name keeps those
// rows apart. Tokens signed with them stop working on upgrade: clients get a new one.)
export const ACCESS_TOKEN_KEYS: KeyPurpose = { name: 'access-token-hs256', alg: 'HS256', overlapSeconds: 2 * 86400 };

export interface RevocationSource {
  revokedKeyIdsSince(since: Date): Promise<string[]>;
}

/** The API keys revoked within the lifetime of a token, refreshed from the database. */
export class RevokedKeys {
  private ids = new Set<string>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly source: RevocationSource,
    private readonly windowSeconds: number,
    private readonly refreshMs = 15_000,
  ) {}

  async refresh(): Promise<void> {
    const since = new Date(Date.now() - (this.windowSeconds + 300) * 1000);
    this.ids = new Set(await this.source.revokedKeyIdsSince(since));
  }

  async start(): Promise<void> {
    await this.refresh();
    this.timer = setInterval(() => void this.refresh().catch(() => {}), this.refreshMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  add(id: string): void {
    this.ids.add(id);
  }

  has(id: string): boolean {
    return this.ids.has(id);
  }
}

export interface IssuedToken {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  scope: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** At most this many verified tokens are remembered per process (the least recently used go first). */
export const VERIFIED_MAX = 10_000;

/** The key a verified token is remembered under: its SHA-256 (the process keeps no bearer token). */
const tokenHash = (token: string) => hash('sha256', token, 'base64url');

export class AccessTokens {
  private readonly verified = new Map<string, { principal: Principal; kid: string; exp: number }>();

  constructor(
    private readonly keys: KeyStore,
    private readonly issuer: string,
    private readonly ttlSeconds: number,
    private readonly revoked: RevokedKeys,
  ) {}

  async issue(subject: { entityId: string; apiKeyId: string; scope: string }): Promise<IssuedToken> {
    const key = await this.keys.signingKey(ACCESS_TOKEN_KEYS.name);
    const now = Math.floor(Date.now() / 1000);
    const token = await signJwt(
      'HS256',
      { kid: key.kid, typ: TOKEN_TYPE },
      {
        scope: subject.scope, akid: subject.apiKeyId, iss: this.issuer, aud: ACCESS_TOKEN_AUDIENCE,
        sub: subject.entityId, iat: now, exp: now + this.ttlSeconds, jti: randomUUID(),
      },
      key.privateKey,
    );
    return { access_token: token, token_type: 'Bearer', expires_in: this.ttlSeconds, scope: subject.scope };
  }

  private refuseRevoked(apiKeyId: string | undefined): void {
    if (apiKeyId && this.revoked.has(apiKeyId)) throw new InvalidCredentials('The API key behind this access token was revoked.');
  }

  async verify(token: string): Promise<Principal> {
    const digest = tokenHash(token);
    const known = this.verified.get(digest);
    if (known) {
      // Same checks as below minus the signature and claims, which cannot have changed:
      // still unexpired, its key still published, its API key not revoked since.
      const valid = known.exp > Date.now() / 1000 && (await this.keys.verificationKey(ACCESS_TOKEN_KEYS.name, known.kid));
      this.verified.delete(digest);
      if (valid) {
        this.verified.set(digest, known); // now the most recently used (no await between: the size holds)
        this.refuseRevoked(known.principal.apiKeyId);
        return known.principal;
      }
    }
    let decoded;
    try {
      decoded = decodeJwt(token);
    } catch {
      throw new InvalidCredentials('The access token is malformed.');
    }
    const kid = typeof decoded.header.kid === 'string' ? decoded.header.kid : undefined;
    const key = kid ? await this.keys.verificationKey(ACCESS_TOKEN_KEYS.name, kid) : undefined;
    if (!key) throw new InvalidCredentials('The access token was not signed by payd.');
    let payload;
    try {
      payload = await verifyJwt('HS256', token, key.publicKey, { issuer: this.issuer, audience: ACCESS_TOKEN_AUDIENCE, typ: TOKEN_TYPE });
    } catch (err) {
      if (err instanceof JwsError && err.message === 'expired') throw new InvalidCredentials('The access token has expired.');
      throw new InvalidCredentials('The access token is not valid.');
    }
    // payd only signs entity and API key ids; anything else (a token minted with a leaked
    // key, a bug) must not reach a query as an id.
    if (typeof payload.sub !== 'string' || !UUID.test(payload.sub) || (payload.akid !== undefined && (typeof payload.akid !== 'string' || !UUID.test(payload.akid)))) {
      throw new InvalidCredentials('The access token is not valid.');
    }
    const apiKeyId = payload.akid as string | undefined;
    this.refuseRevoked(apiKeyId);
    const scopes = typeof payload.scope === 'string' ? payload.scope.split(' ').filter(Boolean) : [];
    const principal: Principal = Object.freeze({ entityId: payload.sub, scopes: Object.freeze(scopes) as string[], via: 'bearer' as const, ...(apiKeyId ? { apiKeyId } : {}) });
    if (this.verified.size >= VERIFIED_MAX) this.verified.delete(this.verified.keys().next().value!);
    this.verified.set(digest, { principal, kid: kid!, exp: payload.exp! });
    return principal;
  }
}
