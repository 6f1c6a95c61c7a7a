// SQL of the dispatcher: claiming due deliveries and recording attempts. Every time
// comes from the database clock (now()), so processes with skewed clocks agree.
import type { Queryable } from '../platform/db/index.ts';
import type { WebhookHeader } from './target.ts';

export interface ClaimedDelivery {
  id: string;
  event_id: string;
  entity_id: string;
  /** The event's own url, else its endpoint's as set now; null when there is neither. */
  url: string | null;
  /** The endpoint it goes to (null: the event's own url); its own secret columns (null: signed with the entity's secret). */
  endpoint_id: string | null;
  secret_version: number | null;
  secret_enc: string | null;
  previous_secret_enc: string | null;
  previous_active: boolean;
  /** Names with masked values (or plain values stored before migration 0014). */
  headers: WebhookHeader[];
  /** The sealed header values (src/webhooks/header-seal.ts), null when none or not yet sealed. */
  headers_enc: string | null;
  /** This attempt's number (1 for the first). */
  attempt_count: number;
  claim_token: string;
  type: string;
  data: unknown;
  event_created_at: Date;
  /** The trace context of the work that wrote the event (W3C traceparent), null when it was not traced. */
  traceparent: string | null;
}

export interface AttemptRecord {
  id: string;
  deliveryId: string;
  claimToken: string;
  attemptNumber: number;
  url: string | null;
  startedAt: Date;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
  responseBody: string | null;
  delivered: boolean;
  /** Wait before the next attempt (when not delivered). */
  retryInMs: number;
  /** Give up (FAILED) when the next attempt would come after created_at + maxAgeMs (null: never). */
  maxAgeMs: number | null;
}

export type DeliveryStatus = 'PENDING' | 'DELIVERED' | 'FAILED';

export const deliveriesRepo = {
  /**
   * Claims up to `limit` due deliveries: each one's next_attempt_at moves a lease ahead,
   * so no other worker sees it as due until the lease ends. Rows another worker is
   * claiming right now are skipped, not waited for.
   */
  async claimDue(q: Queryable, limit: number, leaseMs: number, claimToken: string): Promise<ClaimedDelivery[]> {
    const { rows } = await q.query<ClaimedDelivery>(
      `WITH due AS (
         SELECT id FROM webhook_deliveries
          WHERE status = 'PENDING' AND next_attempt_at <= now()
          ORDER BY next_attempt_at
          LIMIT $1
          FOR UPDATE SKIP LOCKED
       ), claimed AS (
         UPDATE webhook_deliveries d
            SET attempt_count = d.attempt_count + 1,
                next_attempt_at = now() + make_interval(secs => $2::double precision / 1000),
                claim_token = $3, updated_at = now()
           FROM due WHERE d.id = due.id
         RETURNING d.id, d.event_id, d.entity_id, d.endpoint_id, d.attempt_count, d.claim_token
       )
       SELECT c.id, c.event_id, c.entity_id, c.attempt_count, c.claim_token, ep.id AS endpoint_id,
              ep.secret_version, ep.secret_enc, ep.previous_secret_enc, coalesce(ep.previous_active, false) AS previous_active, e.type, e.data, e.created_at AS event_created_at, e.traceparent, coalesce(e.url, ep.url) AS url,
              CASE WHEN e.url IS NOT NULL THEN e.headers ELSE coalesce(ep.headers, '[]'::jsonb) END AS headers,
              CASE WHEN e.url IS NOT NULL THEN e.headers_enc ELSE ep.headers_enc END AS headers_enc
         FROM claimed c JOIN webhook_events e ON e.id = c.event_id
         LEFT JOIN LATERAL (
           SELECT ep.id, ep.url, ep.headers, ep.headers_enc, ep.secret_version, ep.secret_enc, ep.previous_secret_enc,
                  coalesce(ep.previous_expires_at > now(), false) AS previous_active
             FROM webhook_endpoints ep
            WHERE e.url IS NULL AND ep.entity_id = e.entity_id
              AND ((c.endpoint_id IS NULL AND ep.is_default) OR ep.id = c.endpoint_id)
         ) ep ON true`,
      [limit, leaseMs, claimToken],
    );
    return rows;
  },

  /**
   * Logs the attempt and, if this worker still holds the claim, settles the delivery:
   * DELIVERED, PENDING again after retryInMs, or FAILED past its maximum age. Returns the
   * new status, or undefined when the claim was lost (the lease ended meanwhile).
   */
  async recordAttempt(q: Queryable, a: AttemptRecord): Promise<DeliveryStatus | undefined> {
    await q.query(
      `INSERT INTO webhook_attempts (id, delivery_id, attempt_number, url, started_at, duration_ms, status_code, error, response_body)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (delivery_id, attempt_number) DO NOTHING`,
      [a.id, a.deliveryId, a.attemptNumber, a.url, a.startedAt, a.durationMs, a.statusCode, a.error, a.responseBody],
    );
    const { rows } = await q.query<{ status: DeliveryStatus }>(
      `UPDATE webhook_deliveries
          SET status = CASE
                WHEN $3 THEN 'DELIVERED'
                WHEN $5::double precision IS NOT NULL AND now() + make_interval(secs => $4::double precision / 1000)
                     > created_at + make_interval(secs => $5::double precision / 1000) THEN 'FAILED'
                ELSE 'PENDING' END,
              next_attempt_at = CASE WHEN $3 THEN next_attempt_at
                ELSE now() + make_interval(secs => $4::double precision / 1000) END,
              delivered_at = CASE WHEN $3 THEN now() END,
              last_status_code = $6, last_error = $7, claim_token = NULL, updated_at = now()
        WHERE id = $1 AND claim_token = $2 AND status = 'PENDING'
       RETURNING status`,
      [a.deliveryId, a.claimToken, a.delivered, a.retryInMs, a.maxAgeMs, a.statusCode, a.error],
    );
    return rows[0]?.status;
  },

  /** The webhook backlog (metrics): deliveries not yet made, those due now, and how long the oldest due one has waited. */
  async backlog(q: Queryable): Promise<{ pending: number; due: number; oldest_due_seconds: number }> {
    const { rows } = await q.query<{ pending: number; due: number; oldest_due_seconds: number }>(
      `SELECT count(*)::int AS pending, (count(*) FILTER (WHERE next_attempt_at <= now()))::int AS due,
              coalesce(extract(epoch FROM now() - min(next_attempt_at) FILTER (WHERE next_attempt_at <= now())), 0)::float8 AS oldest_due_seconds
         FROM webhook_deliveries WHERE status = 'PENDING'`);
    return rows[0]!;
  },

  /** Gives back a claim that was never used (the worker stopped before calling): due at once. */
  async release(q: Queryable, deliveryId: string, claimToken: string): Promise<void> {
    await q.query(
      `UPDATE webhook_deliveries
          SET next_attempt_at = now(), attempt_count = attempt_count - 1, claim_token = NULL, updated_at = now()
        WHERE id = $1 AND claim_token = $2 AND status = 'PENDING'`,
      [deliveryId, claimToken],
    );
  },
};
