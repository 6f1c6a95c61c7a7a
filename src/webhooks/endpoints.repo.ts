// SQL for the per-entity webhook settings: default endpoint and signing secret.
import type { Queryable } from '../platform/db/index.ts';
import type { WebhookHeader } from './target.ts';

export interface EndpointRow {
  entity_id: string;
  url: string;
  headers: WebhookHeader[];
  created_at: Date;
  updated_at: Date;
}

export interface SecretRow {
  entity_id: string;
  version: number;
  secret_enc: string;
  previous_secret_enc: string | null;
  previous_expires_at: Date | null;
  /** previous_expires_at is still in the future (computed by the database clock). */
  previous_active: boolean;
  created_at: Date;
  rotated_at: Date | null;
}

const SECRET_COLUMNS = `entity_id, version, secret_enc, previous_secret_enc, previous_expires_at,
  coalesce(previous_expires_at > now(), false) AS previous_active, created_at, rotated_at`;

export const endpointsRepo = {
  /** The entity's id as stored (canonical text), or undefined when there is no such entity. */
  async storedEntityId(q: Queryable, entityId: string): Promise<string | undefined> {
    const { rows } = await q.query<{ id: string }>('SELECT id FROM entities WHERE id = $1', [entityId]);
    return rows[0]?.id;
  },

  async getEndpoint(q: Queryable, entityId: string): Promise<EndpointRow | undefined> {
    const { rows } = await q.query<EndpointRow>(
      'SELECT entity_id, url, headers, created_at, updated_at FROM webhook_endpoints WHERE entity_id = $1',
      [entityId],
    );
    return rows[0];
  },

  /** `headers`: the names with masked values; `headersEnc`: the sealed real ones (src/webhooks/header-seal.ts). */
  async upsertEndpoint(q: Queryable, entityId: string, url: string, headers: WebhookHeader[], headersEnc: string | null): Promise<EndpointRow> {
    const { rows } = await q.query<EndpointRow>(
      `INSERT INTO webhook_endpoints (entity_id, url, headers, headers_enc) VALUES ($1, $2, $3::jsonb, $4)
       ON CONFLICT (entity_id) DO UPDATE SET url = EXCLUDED.url, headers = EXCLUDED.headers, headers_enc = EXCLUDED.headers_enc,
         updated_at = now()
       RETURNING entity_id, url, headers, created_at, updated_at`,
      [entityId, url, JSON.stringify(headers), headersEnc],
    );
    return rows[0]!;
  },

  async deleteEndpoint(q: Queryable, entityId: string): Promise<boolean> {
    const res = await q.query('DELETE FROM webhook_endpoints WHERE entity_id = $1', [entityId]);
    return res.rowCount > 0;
  },

  async getSecret(q: Queryable, entityId: string, forUpdate = false): Promise<SecretRow | undefined> {
    const { rows } = await q.query<SecretRow>(
      `SELECT ${SECRET_COLUMNS} FROM webhook_secrets WHERE entity_id = $1${forUpdate ? ' FOR UPDATE' : ''}`,
      [entityId],
    );
    return rows[0];
  },

  /** Inserts version 1 unless a secret exists; true when this call created it. */
  async insertSecret(q: Queryable, entityId: string, secretEnc: string): Promise<boolean> {
    const res = await q.query(
      'INSERT INTO webhook_secrets (entity_id, version, secret_enc) VALUES ($1, 1, $2) ON CONFLICT (entity_id) DO NOTHING',
      [entityId, secretEnc],
    );
    return res.rowCount > 0;
  },

  /** Replaces a sealed secret (current or previous) by the same secret sealed again, unless it changed meanwhile. */
  async resealSecret(q: Queryable, entityId: string, which: 'current' | 'previous', old: string, sealed: string): Promise<void> {
    const column = which === 'current' ? 'secret_enc' : 'previous_secret_enc';
    await q.query(`UPDATE webhook_secrets SET ${column} = $3 WHERE entity_id = $1 AND ${column} = $2`, [entityId, old, sealed]);
  },

  /** The current secret becomes the previous one (valid `previousSeconds` more); `secretEnc` is version + 1. */
  async rotateSecret(q: Queryable, entityId: string, secretEnc: string, previousSeconds: number): Promise<SecretRow> {
    const { rows } = await q.query<SecretRow>(
      `UPDATE webhook_secrets
          SET version = version + 1, secret_enc = $2,
              previous_secret_enc = CASE WHEN $3::int > 0 THEN secret_enc END,
              previous_expires_at = CASE WHEN $3::int > 0 THEN now() + make_interval(secs => $3::int) END,
              rotated_at = now()
        WHERE entity_id = $1
       RETURNING ${SECRET_COLUMNS}`,
      [entityId, secretEnc, previousSeconds],
    );
    return rows[0]!;
  },
};

type HeaderTable = 'webhook_endpoints' | 'webhook_events' | 'payment_links';

/** Rows still holding plain header values (written before migration 0014). */
const PLAIN: Record<HeaderTable, string> = {
  webhook_endpoints: `SELECT entity_id AS key, entity_id, headers FROM webhook_endpoints
    WHERE headers_enc IS NULL AND headers <> '[]'::jsonb LIMIT $1`,
  webhook_events: `SELECT id AS key, entity_id, headers FROM webhook_events
    WHERE headers_enc IS NULL AND headers <> '[]'::jsonb LIMIT $1`,
  payment_links: `SELECT id AS key, entity_id, webhook->'headers' AS headers FROM payment_links
    WHERE jsonb_typeof(webhook->'headers') = 'array' AND webhook->'headers' <> '[]'::jsonb AND NOT (webhook ? 'headers_enc') LIMIT $1`,
};

/** Seals one row if it still holds exactly the plain headers read. */
const SEAL: Record<HeaderTable, string> = {
  webhook_endpoints: `UPDATE webhook_endpoints SET headers = $3::jsonb, headers_enc = $4
    WHERE entity_id = $1 AND headers_enc IS NULL AND headers = $2::jsonb`,
  webhook_events: `UPDATE webhook_events SET headers = $3::jsonb, headers_enc = $4
    WHERE id = $1 AND headers_enc IS NULL AND headers = $2::jsonb`,
  payment_links: `UPDATE payment_links SET webhook = webhook || jsonb_build_object('headers', $3::jsonb, 'headers_enc', $4::text)
    WHERE id = $1 AND NOT (webhook ? 'headers_enc') AND webhook->'headers' = $2::jsonb`,
};

/** SQL of the start-up sweep that seals header values stored in plain text. */
export const headersRepo = {
  async plain(q: Queryable, table: HeaderTable, limit: number): Promise<Array<{ key: string; entity_id: string; headers: WebhookHeader[] }>> {
    const { rows } = await q.query<{ key: string; entity_id: string; headers: WebhookHeader[] }>(PLAIN[table], [limit]);
    return rows;
  },

  async seal(q: Queryable, table: HeaderTable, key: string, plain: WebhookHeader[], masked: WebhookHeader[], sealed: string | null): Promise<boolean> {
    const res = await q.query(SEAL[table], [key, JSON.stringify(plain), JSON.stringify(masked), sealed]);
    return res.rowCount > 0;
  },
};
