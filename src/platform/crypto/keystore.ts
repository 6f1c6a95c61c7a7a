// Signing keys by purpose, kept in the database with the private half (or, for HS256,
// the secret) encrypted by the master key. Every process caches them and refreshes
// periodically, so signing and verifying need no database round trip.
// A purpose's first key is made when it is first needed (to sign, publish or verify),
// not at start-up: an RSA key takes a few hundred ms of CPU to generate (lazy since
// issue 17). Purposes are registered (register()) so that the store knows how to make them.
// HS256 keys are for tokens that only payd itself verifies (access tokens): their
// public_jwk row holds no key material and they must never be published.
import { generateKeyPairSync, type KeyObject, createPrivateKey, createPublicKey, createSecretKey, randomBytes } from 'node:crypto';
import { calculateJwkThumbprint, type JWK } from 'jose';
import type { Db, Queryable } from '../db/index.ts';
import { decrypt, encrypt } from './secrets.ts';
import { type KeyRow, keysRepo } from './keys.repo.ts';

export type KeyAlg = 'RS256' | 'EdDSA' | 'HS256';

export interface KeyPurpose {
  name: string;
  alg: KeyAlg;
  /** How long a retired key stays published for verification (>= the longest token lifetime). */
  overlapSeconds: number;
}

export interface SigningKey {
  kid: string;
  alg: KeyAlg;
  privateKey: KeyObject;
}

export interface PublishedKey {
  kid: string;
  alg: KeyAlg;
  /** For HS256 keys: {kty: 'oct', kid, alg} only, no key material. */
  publicJwk: JWK;
  /** The key that verifies: the public key, or the secret itself for HS256. */
  publicKey: KeyObject;
  retired: boolean;
}

/** The master key in use does not open the signing keys stored in the database. */
export class MasterKeyMismatchError extends Error {
  override name = 'MasterKeyMismatchError';
  constructor(purpose: string, cause?: unknown) {
    super(`The master key does not open the ${purpose} keys stored in this database: every payd process on a database ` +
      'needs the same master key (PAYD_MASTER_KEY, or the same data directory)', { cause });
  }
}

interface CacheEntry {
  loadedAt: number;
  signer: SigningKey | undefined;
  published: PublishedKey[];
}

export class KeyStore {
  private cache = new Map<string, CacheEntry>();
  private lastMissRefresh = new Map<string, number>();
  private purposes = new Map<string, KeyPurpose>();
  private ensuring = new Map<string, Promise<void>>();

  constructor(
    private readonly db: Db,
    private readonly masterKey: Buffer,
    private readonly refreshMs = 60_000,
  ) {}

  private generate(alg: 'RS256' | 'EdDSA'): { privateKey: KeyObject; publicKey: KeyObject } {
    return alg === 'RS256'
      ? generateKeyPairSync('rsa', { modulusLength: 2048 })
      : generateKeyPairSync('ed25519');
  }

  private async insertKey(purpose: KeyPurpose, q: Queryable): Promise<string> {
    if (purpose.alg === 'HS256') {
      const kid = randomBytes(16).toString('base64url');
      const publicJwk: JWK = { kty: 'oct', kid, alg: 'HS256', use: 'sig' };
      const secret = randomBytes(32).toString('base64url');
      await keysRepo.insert(q, { kid, purpose: purpose.name, alg: 'HS256', publicJwk, privateKeyEnc: encrypt(this.masterKey, secret, kid) });
      return kid;
    }
    const { privateKey, publicKey } = this.generate(purpose.alg);
    const jwk = publicKey.export({ format: 'jwk' }) as JWK;
    const kid = await calculateJwkThumbprint(jwk);
    const publicJwk: JWK = { ...jwk, kid, alg: purpose.alg, use: 'sig' };
    const pem = privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
    await keysRepo.insert(q, { kid, purpose: purpose.name, alg: purpose.alg, publicJwk, privateKeyEnc: encrypt(this.masterKey, pem, kid) });
    return kid;
  }

  /** The purposes whose first key is made on first use. */
  register(...purposes: KeyPurpose[]): void {
    for (const p of purposes) this.purposes.set(p.name, p);
  }

  /** Makes sure the purpose has a key that signs; safe when several processes start at once. */
  async ensure(purpose: KeyPurpose): Promise<void> {
    await this.db.transaction(async (tx) => {
      await keysRepo.lock(tx);
      if (!(await keysRepo.hasActive(tx, purpose.name))) await this.insertKey(purpose, tx);
    });
    this.cache.delete(purpose.name);
    // Opens the keys now, so that a process started with another master key than the one
    // that sealed them stops at start-up instead of failing every request that signs.
    try {
      await this.load(purpose.name);
    } catch (err) {
      throw new MasterKeyMismatchError(purpose.name, err);
    }
  }

  /**
   * Reads only: the master key opens every active key already stored (there are none on a
   * new database, not even a table). main.ts calls it before migrations and before the
   * server starts, so that a process with another key stops before any side effect.
   */
  async checkMasterKey(): Promise<void> {
    for (const row of await keysRepo.activeSealed(this.db)) {
      try {
        decrypt(this.masterKey, row.private_key_enc, row.kid);
      } catch (err) {
        throw new MasterKeyMismatchError(row.purpose, err);
      }
    }
  }

  /** A new key signs from now on; the previous ones stay published for overlapSeconds. */
  async rotate(purpose: KeyPurpose): Promise<string> {
    const kid = await this.db.transaction(async (tx) => {
      await keysRepo.lock(tx);
      await keysRepo.retireActive(tx, purpose.name, purpose.overlapSeconds);
      return this.insertKey(purpose, tx);
    });
    this.cache.delete(purpose.name);
    return kid;
  }

  private async load(purpose: string): Promise<CacheEntry> {
    const rows = await keysRepo.live(this.db, purpose);
    const active = rows.find((r) => r.retired_at === null);
    const secret = (r: KeyRow) => createSecretKey(Buffer.from(decrypt(this.masterKey, r.private_key_enc, r.kid), 'base64url'));
    const entry: CacheEntry = {
      loadedAt: Date.now(),
      signer: active && {
        kid: active.kid,
        alg: active.alg,
        privateKey: active.alg === 'HS256' ? secret(active) : createPrivateKey(decrypt(this.masterKey, active.private_key_enc, active.kid)),
      },
      published: rows.map((r) => ({
        kid: r.kid,
        alg: r.alg,
        publicJwk: typeof r.public_jwk === 'string' ? JSON.parse(r.public_jwk) : r.public_jwk,
        publicKey: r.alg === 'HS256' ? secret(r) : createPublicKey({ key: r.public_jwk as never, format: 'jwk' }),
        retired: r.retired_at !== null,
      })),
    };
    // A registered purpose without a key is never cached: this read may have begun before
    // another request or process made the first key and ended after it, and a cached "no
    // key" would fail every signature until the refresh (entry() makes the key instead).
    if (entry.signer || !this.purposes.has(purpose)) this.cache.set(purpose, entry);
    return entry;
  }

  private async entry(purpose: string): Promise<CacheEntry> {
    const cached = this.cache.get(purpose);
    if (cached && Date.now() - cached.loadedAt < this.refreshMs) return cached;
    const entry = await this.load(purpose);
    const registered = this.purposes.get(purpose);
    if (entry.signer || !registered) return entry;
    // No key yet: the first use makes it (once per process; the lock in ensure() makes it
    // once per database when several processes get here together).
    let making = this.ensuring.get(purpose);
    if (!making) {
      making = this.ensure(registered).finally(() => this.ensuring.delete(purpose));
      this.ensuring.set(purpose, making);
    }
    await making;
    return this.load(purpose);
  }

  async signingKey(purpose: string): Promise<SigningKey> {
    const { signer } = await this.entry(purpose);
    if (!signer) throw new Error(`no signing key for purpose ${purpose}: it is not registered with the key store`);
    return signer;
  }

  async published(purpose: string): Promise<PublishedKey[]> {
    return (await this.entry(purpose)).published;
  }

  /** The public key for a kid; an unknown kid triggers a reload at most once a second. */
  async verificationKey(purpose: string, kid: string): Promise<PublishedKey | undefined> {
    const found = (await this.entry(purpose)).published.find((k) => k.kid === kid);
    if (found) return found;
    const last = this.lastMissRefresh.get(purpose) ?? 0;
    if (Date.now() - last < 1000) return undefined;
    this.lastMissRefresh.set(purpose, Date.now());
    return (await this.load(purpose)).published.find((k) => k.kid === kid);
  }
}
