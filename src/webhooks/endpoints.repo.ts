// SQL for the per-entity webhook settings: the endpoints (the default one and the
// others, migration 0051) and the signing secrets.
import type { Queryable } from '../platform/db/index.ts';
import type { WebhookHeader } from './target.ts';

export type EndpointStatus = 'enabled' | 'disabled';

export interface EndpointRow {
  id: string;
  entity_id: string;
  url: string;
  headers: WebhookHeader[];
  description: string | null;
  enabled_events: string[];
  status: EndpointStatus;
  /** The entity's default endpoint: the one of the deprecated singular routes, signed with the entity's secret. */
  is_default: boolean;
  created_at: Date;
  updated_at: Date;
}

/** An endpoint's own signing secret (null columns: the default endpoint, signed with the entity's secret). */
export interface EndpointSecretRow {
  id: string;
  entity_id: string;
  is_default: boolean;
  secret_version: number | null;
  secret_enc: string | null;
  previous_secret_enc: string | null;
  previous_expires_at: Date | null;
  previous_active: boolean;
  created_at: Date;
  rotated_at: Date | null;
}

export interface NewEndpoint {
  id: string;
  entityId: string;
  url: string;
  headers: WebhookHeader[];
  headersEnc: string | null;
  description: string | null;
  enabledEvents: string[];
  status: EndpointStatus;
  secretEnc: string;
}

export interface EndpointPatch {
  url?: string;
  headers?: WebhookHeader[];
  headersEnc?: string | null;
  description?: string | null;
  enabledEvents?: string[];
  status?: EndpointStatus;
}

const ENDPOINT_COLUMNS = 'id, entity_id, url, headers, description, enabled_events, status, is_default, created_at, updated_at';
const ENDPOINT_SECRET_COLUMNS = `id, entity_id, is_default, secret_version, secret_enc, previous_secret_enc, previous_expires_at,
  coalesce(previous_expires_at > now(), false) AS previous_active, created_at, rotated_at`;

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

  /** The default endpoint (the singular routes' one). */
  async getEndpoint(q: Queryable, entityId: string): Promise<EndpointRow | undefined> {
    const { rows } = await q.query<EndpointRow>(
      `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE entity_id = $1 AND is_default`,
      [entityId],
    );
    return rows[0];
  },

  /**
   * Sets the default endpoint's URL and headers (creating it, with `id`, when the entity
   * has none). `headers`: the names with masked values; `headersEnc`: the sealed real ones
   * (src/webhooks/header-seal.ts).
   */
  async upsertEndpoint(q: Queryable, entityId: string, id: string, url: string, headers: WebhookHeader[], headersEnc: string | null): Promise<EndpointRow> {
    const { rows } = await q.query<EndpointRow>(
      `INSERT INTO webhook_endpoints (id, entity_id, url, headers, headers_enc, is_default) VALUES ($1, $2, $3, $4::jsonb, $5, true)
       ON CONFLICT (entity_id) WHERE is_default DO UPDATE SET url = EXCLUDED.url, headers = EXCLUDED.headers, headers_enc = EXCLUDED.headers_enc,
         updated_at = now()
       RETURNING ${ENDPOINT_COLUMNS}`,
      [id, entityId, url, JSON.stringify(headers), headersEnc],
    );
    return rows[0]!;
  },

  /** Removes the default endpoint. */
  async deleteEndpoint(q: Queryable, entityId: string): Promise<boolean> {
    const res = await q.query('DELETE FROM webhook_endpoints WHERE entity_id = $1 AND is_default', [entityId]);
    return res.rowCount > 0;
  },

  /** Serialises the changes of an entity's set of endpoints (the cap): a row lock on the entity that FK checks do not wait for. */
  async lockEntity(q: Queryable, entityId: string): Promise<void> {
    await q.query('SELECT id FROM entities WHERE id = $1 FOR NO KEY UPDATE', [entityId]);
  },

  async countEndpoints(q: Queryable, entityId: string): Promise<number> {
    const { rows } = await q.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_endpoints WHERE entity_id = $1', [entityId]);
    return rows[0]!.n;
  },

  async insertEndpoint(q: Queryable, e: NewEndpoint): Promise<EndpointRow> {
    const { rows } = await q.query<EndpointRow>(
      `INSERT INTO webhook_endpoints (id, entity_id, url, headers, headers_enc, description, enabled_events, status, is_default, secret_version, secret_enc)
       VALUES ($1, $2, $3, $4::jsonb, $5, $6, $7::jsonb, $8, false, 1, $9)
       RETURNING ${ENDPOINT_COLUMNS}`,
      [e.id, e.entityId, e.url, JSON.stringify(e.headers), e.headersEnc, e.description, JSON.stringify(e.enabledEvents), e.status, e.secretEnc],
    );
    return rows[0]!;
  },

  /** One endpoint of the entity (another entity's id: undefined). */
  async endpointById(q: Queryable, entityId: string, id: string): Promise<EndpointRow | undefined> {
    const { rows } = await q.query<EndpointRow>(
      `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = $1 AND entity_id = $2`, [id, entityId]);
    return rows[0];
  },

  /** A page of the entity's endpoints, newest first, limit rows after the endpoint `after` (undefined when it is not the entity's). */
  async listEndpoints(q: Queryable, entityId: string, limit: number, after?: string): Promise<EndpointRow[] | undefined> {
    const params: unknown[] = [entityId, limit];
    let cursor = '';
    if (after !== undefined) {
      const { rows } = await q.query('SELECT 1 FROM webhook_endpoints WHERE id = $1 AND entity_id = $2', [after, entityId]);
      if (!rows[0]) return undefined;
      cursor = ` AND (created_at, id) < (SELECT created_at, id FROM webhook_endpoints WHERE id = $${params.push(after)})`;
    }
    const { rows } = await q.query<EndpointRow>(
      `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE entity_id = $1${cursor} ORDER BY created_at DESC, id DESC LIMIT $2`, params);
    return rows;
  },

  async updateEndpoint(q: Queryable, entityId: string, id: string, p: EndpointPatch): Promise<EndpointRow | undefined> {
    const params: unknown[] = [id, entityId];
    const set: string[] = ['updated_at = now()'];
    if (p.url !== undefined) set.push(`url = $${params.push(p.url)}`);
    if (p.headers !== undefined) {
      set.push(`headers = $${params.push(JSON.stringify(p.headers))}::jsonb`);
      set.push(`headers_enc = $${params.push(p.headersEnc ?? null)}`);
    }
    if (p.description !== undefined) set.push(`description = $${params.push(p.description)}`);
    if (p.enabledEvents !== undefined) set.push(`enabled_events = $${params.push(JSON.stringify(p.enabledEvents))}::jsonb`);
    if (p.status !== undefined) set.push(`status = $${params.push(p.status)}`);
    const { rows } = await q.query<EndpointRow>(
      `UPDATE webhook_endpoints SET ${set.join(', ')} WHERE id = $1 AND entity_id = $2 RETURNING ${ENDPOINT_COLUMNS}`, params);
    return rows[0];
  },

  async deleteEndpointById(q: Queryable, entityId: string, id: string): Promise<boolean> {
    const res = await q.query('DELETE FROM webhook_endpoints WHERE id = $1 AND entity_id = $2', [id, entityId]);
    return res.rowCount > 0;
  },

  async endpointSecret(q: Queryable, entityId: string, id: string, forUpdate = false): Promise<EndpointSecretRow | undefined> {
    const { rows } = await q.query<EndpointSecretRow>(
      `SELECT ${ENDPOINT_SECRET_COLUMNS} FROM webhook_endpoints WHERE id = $1 AND entity_id = $2${forUpdate ? ' FOR UPDATE' : ''}`,
      [id, entityId],
    );
    return rows[0];
  },

  /** An endpoint's current secret becomes its previous one (valid `previousSeconds` more); `secretEnc` is version + 1. */
  async rotateEndpointSecret(q: Queryable, id: string, secretEnc: string, previousSeconds: number): Promise<EndpointSecretRow> {
    const { rows } = await q.query<EndpointSecretRow>(
      `UPDATE webhook_endpoints
          SET secret_version = secret_version + 1, secret_enc = $2,
              previous_secret_enc = CASE WHEN $3::int > 0 THEN secret_enc END,
              previous_expires_at = CASE WHEN $3::int > 0 THEN now() + make_interval(secs => $3::int) END,
              rotated_at = now()
        WHERE id = $1
       RETURNING ${ENDPOINT_SECRET_COLUMNS}`,
      [id, secretEnc, previousSeconds],
    );
    return rows[0]!;
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
  webhook_endpoints: `SELECT id::text AS key, entity_id, headers FROM webhook_endpoints
    WHERE headers_enc IS NULL AND headers <> '[]'::jsonb LIMIT $1`,
  webhook_events: `SELECT id AS key, entity_id, headers FROM webhook_events
    WHERE headers_enc IS NULL AND headers <> '[]'::jsonb LIMIT $1`,
  payment_links: `SELECT id AS key, entity_id, webhook->'headers' AS headers FROM payment_links
    WHERE jsonb_typeof(webhook->'headers') = 'array' AND webhook->'headers' <> '[]'::jsonb AND NOT (webhook ? 'headers_enc') LIMIT $1`,
};

/** Seals one row if it still holds exactly the plain headers read. */
const SEAL: Record<HeaderTable, string> = {
  webhook_endpoints: `UPDATE webhook_endpoints SET headers = $3::jsonb, headers_enc = $4
    WHERE id = $1 AND headers_enc IS NULL AND headers = $2::jsonb`,
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
