// Onboarding rules: merchant entities and their API keys. No HTTP, no SQL here.
import { randomUUID } from 'node:crypto';
import type { Db } from '../platform/db/index.ts';
import { generateSecret, sha256, sha256For } from '../platform/crypto/secrets.ts';
import { problems } from '../platform/http/problem.ts';
import { type ApiKeyRow, type EntityRow, entitiesRepo } from './entities.repo.ts';
import { MAX_CHECKOUT_ORIGIN_LENGTH, MAX_CHECKOUT_ORIGINS } from './entities.schemas.ts';

export const API_KEY_PREFIX = 'payd_sk_';
const API_KEY_SHAPE = /^payd_sk_[A-Za-z0-9_-]{43}$/;

export interface CreatedApiKey {
  id: string;
  entity_id: string;
  api_key: string;
  prefix: string;
  created_at: Date;
}

/** An opaque cursor naming the last row of a page. */
export function encodeCursor(row: { id: string }): string {
  return Buffer.from(`entity:${row.id}`).toString('base64url');
}

export function decodeCursor(raw: string): string {
  const m = /^entity:([0-9a-f-]{36})$/.exec(Buffer.from(raw, 'base64url').toString('utf8'));
  if (!m) throw problems.invalidField('starting_after', 'is not a cursor returned by this API', 'query');
  return m[1]!;
}

/** NOTIFY channel that carries the id of each revoked API key to every process. */
export const API_KEY_REVOKED_CHANNEL = 'payd_api_key_revoked';
const KEY_CACHE_TTL_MS = 30_000;
const KEY_CACHE_MAX = 10_000;

interface CachedKey {
  id: string;
  entity_id: string;
  at: number;
}

export class EntitiesService {
  /**
   * Active API keys by hash. An entry is dropped when any process revokes the key (NOTIFY
   * on commit), when the notification connection is lost, and after 30 s in any case.
   */
  private keyCache = new Map<string, CachedKey>();
  private stopFeed: (() => Promise<void>) | undefined;

  constructor(private readonly db: Db) {}

  /** Subscribes to revocations from every process; onRevoked also learns of them. */
  async startRevocationFeed(onRevoked: (keyId: string) => void): Promise<void> {
    this.stopFeed = await this.db.listen(
      API_KEY_REVOKED_CHANNEL,
      (keyId) => {
        this.evict(keyId);
        onRevoked(keyId);
      },
      () => this.keyCache.clear(),
    );
  }

  async stopRevocationFeed(): Promise<void> {
    await this.stopFeed?.();
  }

  private evict(keyId: string): void {
    for (const [hash, entry] of this.keyCache) if (entry.id === keyId) this.keyCache.delete(hash);
  }

  async create(name: string): Promise<EntityRow> {
    const trimmed = name.trim();
    if (!trimmed) throw problems.invalidField('name', 'must not be blank');
    return entitiesRepo.insert(this.db, { id: randomUUID(), name: trimmed });
  }

  /** The display name shoppers see on payd's pages (hosted page, payment link, receipt). */
  async rename(id: string, name: string): Promise<EntityRow> {
    const trimmed = name.trim();
    if (!trimmed) throw problems.invalidField('name', 'must not be blank');
    const entity = await entitiesRepo.rename(this.db, id, trimmed);
    if (!entity) throw problems.notFound(`Entity ${id} does not exist.`);
    return entity;
  }

  /** Name and checkout origins (either or both); the origins are replaced as a whole. */
  async update(id: string, body: { name?: string | undefined; checkout_origins?: string[] | undefined }): Promise<EntityRow> {
    const origins = body.checkout_origins?.map((o, i) => checkoutOrigin(o, `checkout_origins[${i}]`));
    if (body.name !== undefined) await this.rename(id, body.name);
    if (origins) {
      const entity = await entitiesRepo.setCheckoutOrigins(this.db, id, [...new Set(origins)]);
      if (!entity) throw problems.notFound(`Entity ${id} does not exist.`);
      return entity;
    }
    return this.get(id);
  }

  /**
   * Adds one checkout origin (the dashboard's form), checked as PATCH checks each of its
   * list (checkoutOrigin, the length and the cap of its schema); one already there changes
   * nothing (added: false). The entity's row is locked, so two adds at once keep both.
   */
  async addCheckoutOrigin(id: string, text: string, field = 'origin'): Promise<{ entity: EntityRow; origin: string; added: boolean }> {
    if (text.length > MAX_CHECKOUT_ORIGIN_LENGTH) throw problems.invalidField(field, `must be at most ${MAX_CHECKOUT_ORIGIN_LENGTH} characters`);
    const origin = checkoutOrigin(text, field);
    return this.db.transaction(async (tx) => {
      const current = await entitiesRepo.lockCheckoutOrigins(tx, id);
      if (!current) throw problems.notFound(`Entity ${id} does not exist.`);
      if (current.includes(origin)) return { entity: (await entitiesRepo.get(tx, id))!, origin, added: false };
      if (current.length >= MAX_CHECKOUT_ORIGINS) throw problems.invalidField(field, `cannot be added: an entity has at most ${MAX_CHECKOUT_ORIGINS} checkout origins (remove one first)`);
      return { entity: (await entitiesRepo.setCheckoutOrigins(tx, id, [...current, origin]))!, origin, added: true };
    });
  }

  /** Removes one checkout origin (as listed); one not there changes nothing (removed: false). */
  async removeCheckoutOrigin(id: string, origin: string): Promise<{ entity: EntityRow; removed: boolean }> {
    return this.db.transaction(async (tx) => {
      const current = await entitiesRepo.lockCheckoutOrigins(tx, id);
      if (!current) throw problems.notFound(`Entity ${id} does not exist.`);
      if (!current.includes(origin)) return { entity: (await entitiesRepo.get(tx, id))!, removed: false };
      return { entity: (await entitiesRepo.setCheckoutOrigins(tx, id, current.filter((o) => o !== origin)))!, removed: true };
    });
  }

  async get(id: string): Promise<EntityRow> {
    const entity = await entitiesRepo.get(this.db, id);
    if (!entity) throw problems.notFound(`Entity ${id} does not exist.`);
    return entity;
  }

  async list(limit: number, startingAfter?: string): Promise<{ data: EntityRow[]; next_cursor: string | null }> {
    const rows = await entitiesRepo.list(this.db, limit + 1, startingAfter ? decodeCursor(startingAfter) : undefined);
    const data = rows.slice(0, limit);
    return { data, next_cursor: rows.length > limit ? encodeCursor(data[data.length - 1]!) : null };
  }

  async count(): Promise<number> {
    return entitiesRepo.count(this.db);
  }

  async createApiKey(entityId: string): Promise<CreatedApiKey> {
    await this.get(entityId);
    const apiKey = generateSecret(API_KEY_PREFIX);
    const row = await entitiesRepo.insertApiKey(this.db, {
      id: randomUUID(),
      entityId,
      hash: sha256(apiKey),
      prefix: apiKey.slice(0, API_KEY_PREFIX.length + 4),
    });
    return { id: row.id, entity_id: entityId, api_key: apiKey, prefix: row.prefix, created_at: row.created_at };
  }

  async listApiKeys(entityId: string): Promise<ApiKeyRow[]> {
    await this.get(entityId);
    return entitiesRepo.listApiKeys(this.db, entityId);
  }

  async revokeApiKey(entityId: string, keyId: string): Promise<ApiKeyRow> {
    const row = await this.db.transaction(async (tx) => {
      const revoked = await entitiesRepo.revokeApiKey(tx, entityId, keyId);
      if (revoked) await entitiesRepo.notify(tx, API_KEY_REVOKED_CHANNEL, revoked.id);
      return revoked;
    });
    if (!row) throw problems.notFound(`API key ${keyId} does not exist for entity ${entityId}.`);
    this.evict(row.id);
    return row;
  }

  /**
   * The entity and key id behind an API key, or undefined when unknown or revoked. Given the
   * request (its headers), the key's hash is the one its rate limit computed (sha256For).
   */
  async resolveApiKey(apiKey: string, request?: object): Promise<{ id: string; entity_id: string } | undefined> {
    if (!API_KEY_SHAPE.test(apiKey)) return undefined;
    const hash = request ? sha256For(request, apiKey) : sha256(apiKey);
    const cacheKey = hash.toString('base64');
    const cached = this.keyCache.get(cacheKey);
    if (cached && Date.now() - cached.at < KEY_CACHE_TTL_MS) return { id: cached.id, entity_id: cached.entity_id };
    const found = await entitiesRepo.findActiveApiKeyByHash(this.db, hash);
    if (found) {
      if (this.keyCache.size >= KEY_CACHE_MAX) this.keyCache.clear();
      this.keyCache.set(cacheKey, { ...found, at: Date.now() });
    } else {
      this.keyCache.delete(cacheKey);
    }
    return found;
  }

  async revokedKeyIdsSince(since: Date): Promise<string[]> {
    return entitiesRepo.revokedSince(this.db, since);
  }
}

/** An origin a merchant's pages are served from: https (http only for localhost), no path, query or credentials; as browsers write it. */
export function checkoutOrigin(text: string, field: string): string {
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    throw problems.invalidField(field, 'must be an origin such as https://shop.example');
  }
  const local = url.hostname === 'localhost' || url.hostname === '127.0.0.1' || url.hostname === '[::1]';
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && local)) throw problems.invalidField(field, 'must be https (http only for localhost)');
  if (url.origin !== text.trim().replace(/\/$/, '')) throw problems.invalidField(field, 'must be an origin only: scheme, host and port, no path, query or credentials');
  return url.origin;
}
