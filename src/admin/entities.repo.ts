// SQL for entities and their API keys.
import type { Queryable } from '../platform/db/index.ts';

export interface EntityRow {
  id: string;
  name: string;
  created_at: Date;
  /** Origins that may embed the entity's checkout frames; empty: any page. */
  checkout_origins: string[];
}

export interface ApiKeyRow {
  id: string;
  entity_id: string;
  prefix: string;
  created_at: Date;
  revoked_at: Date | null;
}

export const entitiesRepo = {
  async insert(q: Queryable, e: { id: string; name: string }): Promise<EntityRow> {
    const { rows } = await q.query<EntityRow>(
      'INSERT INTO entities (id, name) VALUES ($1, $2) RETURNING id, name, created_at, checkout_origins',
      [e.id, e.name],
    );
    return rows[0]!;
  },

  async rename(q: Queryable, id: string, name: string): Promise<EntityRow | undefined> {
    const { rows } = await q.query<EntityRow>('UPDATE entities SET name = $2 WHERE id = $1 RETURNING id, name, created_at, checkout_origins', [id, name]);
    return rows[0];
  },

  async setCheckoutOrigins(q: Queryable, id: string, origins: string[]): Promise<EntityRow | undefined> {
    const { rows } = await q.query<EntityRow>('UPDATE entities SET checkout_origins = $2 WHERE id = $1 RETURNING id, name, created_at, checkout_origins', [id, origins]);
    return rows[0];
  },

  /** The entity's checkout origins, its row locked until the transaction ends (undefined: no such entity). */
  async lockCheckoutOrigins(q: Queryable, id: string): Promise<string[] | undefined> {
    const { rows } = await q.query<{ checkout_origins: string[] }>('SELECT checkout_origins FROM entities WHERE id = $1 FOR NO KEY UPDATE', [id]);
    return rows[0]?.checkout_origins;
  },

  /** What a session's framed pages need, in one read: its merchant's checkout origins (empty when no such session) and the session's customer.locale. */
  async framingOfSession(q: Queryable, sessionId: string): Promise<{ checkoutOrigins: string[]; customerLocale: unknown }> {
    const { rows } = await q.query<{ checkout_origins: string[]; locale: unknown }>(
      "SELECT e.checkout_origins, s.customer->'locale' AS locale FROM client_sessions s JOIN entities e ON e.id = s.entity_id WHERE s.id = $1", [sessionId]);
    return { checkoutOrigins: rows[0]?.checkout_origins ?? [], customerLocale: rows[0]?.locale ?? undefined };
  },

  async get(q: Queryable, id: string): Promise<EntityRow | undefined> {
    const { rows } = await q.query<EntityRow>('SELECT id, name, created_at, checkout_origins FROM entities WHERE id = $1', [id]);
    return rows[0];
  },

  /** A page after the entity `afterId` (its stored created_at keeps full microsecond precision). */
  async list(q: Queryable, limit: number, afterId?: string): Promise<EntityRow[]> {
    const { rows } = afterId
      ? await q.query<EntityRow>(
          `SELECT id, name, created_at, checkout_origins FROM entities
            WHERE (created_at, id) > (SELECT created_at, id FROM entities WHERE id = $1)
            ORDER BY created_at, id LIMIT $2`,
          [afterId, limit],
        )
      : await q.query<EntityRow>('SELECT id, name, created_at, checkout_origins FROM entities ORDER BY created_at, id LIMIT $1', [limit]);
    return rows;
  },

  async count(q: Queryable): Promise<number> {
    const { rows } = await q.query<{ n: number }>('SELECT count(*)::int AS n FROM entities');
    return rows[0]!.n;
  },

  async insertApiKey(q: Queryable, k: { id: string; entityId: string; hash: Buffer; prefix: string }): Promise<ApiKeyRow> {
    const { rows } = await q.query<ApiKeyRow>(
      `INSERT INTO api_keys (id, entity_id, key_hash, prefix) VALUES ($1, $2, $3, $4)
       RETURNING id, entity_id, prefix, created_at, revoked_at`,
      [k.id, k.entityId, k.hash, k.prefix],
    );
    return rows[0]!;
  },

  async listApiKeys(q: Queryable, entityId: string): Promise<ApiKeyRow[]> {
    const { rows } = await q.query<ApiKeyRow>(
      'SELECT id, entity_id, prefix, created_at, revoked_at FROM api_keys WHERE entity_id = $1 ORDER BY created_at, id',
      [entityId],
    );
    return rows;
  },

  /** Revokes once: a second revocation keeps the first revocation time. */
  async revokeApiKey(q: Queryable, entityId: string, keyId: string): Promise<ApiKeyRow | undefined> {
    const { rows } = await q.query<ApiKeyRow>(
      `UPDATE api_keys SET revoked_at = coalesce(revoked_at, now())
        WHERE id = $1 AND entity_id = $2
       RETURNING id, entity_id, prefix, created_at, revoked_at`,
      [keyId, entityId],
    );
    return rows[0];
  },

  /** Tells every payd process listening on the channel, when the transaction commits. */
  async notify(q: Queryable, channel: string, payload: string): Promise<void> {
    await q.query('SELECT pg_notify($1, $2)', [channel, payload]);
  },

  async findActiveApiKeyByHash(q: Queryable, hash: Buffer): Promise<{ id: string; entity_id: string } | undefined> {
    const { rows } = await q.query<{ id: string; entity_id: string }>(
      'SELECT id, entity_id FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL',
      [hash],
    );
    return rows[0];
  },

  async revokedSince(q: Queryable, since: Date): Promise<string[]> {
    const { rows } = await q.query<{ id: string }>('SELECT id FROM api_keys WHERE revoked_at >= $1', [since]);
    return rows.map((r) => r.id);
  },
};
