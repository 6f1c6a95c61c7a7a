// Onboarding rules: merchant entities and their API keys. No HTTP, no SQL here.
import { randomUUID } from 'node:crypto';
import type { Db } from '../platform/db/index.ts';
import { generateSecret, sha256 } from '../platform/crypto/secrets.ts';
import { problems } from '../platform/http/problem.ts';
import { type ApiKeyRow, type EntityRow, entitiesRepo } from './entities.repo.ts';

export const API_KEY_PREFIX = 'payd_sk_';
const API_KEY_SHAPE = /^payd_sk_[A-Za-z0-9_-]{43}$/;

export interface CreatedApiKey {
  id: string;
  entity_id: string;
  api_key: string;
  prefix: string;
  created_at: Date;
}

export interface Cursor {
  created_at: Date;
  id: string;
}

export function encodeCursor(row: { created_at: Date; id: string }): string {
  return Buffer.from(JSON.stringify([row.created_at.toISOString(), row.id])).toString('base64url');
}

export function decodeCursor(raw: string): Cursor {
  try {
    const [at, id] = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as [string, string];
    const created_at = new Date(at);
    if (Number.isNaN(created_at.getTime()) || typeof id !== 'string') throw new Error('bad');
    return { created_at, id };
  } catch {
    throw problems.invalidField('starting_after', 'is not a cursor returned by this API', 'query');
  }
}

export class EntitiesService {
  constructor(private readonly db: Db) {}

  async create(name: string): Promise<EntityRow> {
    const trimmed = name.trim();
    if (!trimmed) throw problems.invalidField('name', 'must not be blank');
    return entitiesRepo.insert(this.db, { id: randomUUID(), name: trimmed });
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
    const row = await entitiesRepo.revokeApiKey(this.db, entityId, keyId);
    if (!row) throw problems.notFound(`API key ${keyId} does not exist for entity ${entityId}.`);
    return row;
  }

  /** The entity and key id behind an API key, or undefined when unknown or revoked. */
  async resolveApiKey(apiKey: string): Promise<{ id: string; entity_id: string } | undefined> {
    if (!API_KEY_SHAPE.test(apiKey)) return undefined;
    return entitiesRepo.findActiveApiKeyByHash(this.db, sha256(apiKey));
  }

  async revokedKeyIdsSince(since: Date): Promise<string[]> {
    return entitiesRepo.revokedSince(this.db, since);
  }
}
