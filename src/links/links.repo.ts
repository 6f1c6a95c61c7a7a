// SQL for payment links.
import type { Queryable } from '../platform/db/index.ts';

export interface PaymentLinkRow {
  id: string;
  entity_id: string;
  version: number;
  status: 'CREATED' | 'PAID' | 'CANCELLED';
  amount: number;
  currency: string;
  capture_mode: string;
  shopper_redirection_url: string | null;
  expires_at: Date;
  order: Record<string, unknown> | null;
  customer: Record<string, unknown> | null;
  three_ds_authentication_options: Record<string, unknown> | null;
  /** headers: names with masked values; headers_enc: the sealed real values (src/webhooks/header-seal.ts). */
  webhook: { url: string; headers?: Array<{ name: string; values: string[] }>; headers_enc?: string | null } | null;
  allow_future_usage: boolean;
  payment_id: string | null;
  attempt_session_id: string | null;
  attempt_started_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export const LINK_COLUMNS = `id, entity_id, version, status, amount, currency, capture_mode, shopper_redirection_url, expires_at, "order",
  customer, three_ds_authentication_options, webhook, allow_future_usage, payment_id, attempt_session_id, attempt_started_at,
  created_at, updated_at`;

const json = (v: unknown) => (v === undefined || v === null ? null : JSON.stringify(v));

export interface LinkAttemptRow { id: string; created_at: Date; amount: number; currency: string; authorization_status: string }

export type NewPaymentLink = Omit<PaymentLinkRow, 'version' | 'status' | 'payment_id' | 'attempt_session_id' | 'attempt_started_at' | 'created_at' | 'updated_at'>;

export const linksRepo = {
  async insert(q: Queryable, l: NewPaymentLink): Promise<PaymentLinkRow> {
    const { rows } = await q.query<PaymentLinkRow>(
      `INSERT INTO payment_links (id, entity_id, status, amount, currency, capture_mode, shopper_redirection_url, expires_at,
         "order", customer, three_ds_authentication_options, webhook, allow_future_usage)
       VALUES ($1, $2, 'CREATED', $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING ${LINK_COLUMNS}`,
      [l.id, l.entity_id, l.amount, l.currency, l.capture_mode, l.shopper_redirection_url, l.expires_at, json(l.order),
        json(l.customer), json(l.three_ds_authentication_options), json(l.webhook), l.allow_future_usage],
    );
    return rows[0]!;
  },

  async get(q: Queryable, entityId: string, id: string, lock = false): Promise<PaymentLinkRow | undefined> {
    const { rows } = await q.query<PaymentLinkRow>(
      `SELECT ${LINK_COLUMNS} FROM payment_links WHERE id = $1 AND entity_id = $2${lock ? ' FOR UPDATE' : ''}`, [id, entityId]);
    return rows[0];
  },

  /** For the customer page: the link by id alone (its URL is the capability). */
  async getById(q: Queryable, id: string, lock = false): Promise<PaymentLinkRow | undefined> {
    const { rows } = await q.query<PaymentLinkRow>(`SELECT ${LINK_COLUMNS} FROM payment_links WHERE id = $1${lock ? ' FOR UPDATE' : ''}`, [id]);
    return rows[0];
  },

  async cancel(q: Queryable, id: string): Promise<PaymentLinkRow> {
    const { rows } = await q.query<PaymentLinkRow>(
      `UPDATE payment_links SET status = 'CANCELLED', cancelled_at = now(), version = version + 1, updated_at = now()
        WHERE id = $1 RETURNING ${LINK_COLUMNS}`, [id]);
    return rows[0]!;
  },

  async markPaid(q: Queryable, id: string, paymentId: string): Promise<PaymentLinkRow> {
    const { rows } = await q.query<PaymentLinkRow>(
      `UPDATE payment_links SET status = 'PAID', payment_id = $2, paid_at = now(), attempt_session_id = NULL,
         version = version + 1, updated_at = now() WHERE id = $1 RETURNING ${LINK_COLUMNS}`, [id, paymentId]);
    return rows[0]!;
  },

  async setAttempt(q: Queryable, id: string, sessionId: string | null): Promise<void> {
    await q.query(
      `UPDATE payment_links SET attempt_session_id = $2, attempt_started_at = CASE WHEN $2::uuid IS NULL THEN NULL ELSE now() END,
         updated_at = now() WHERE id = $1`, [id, sessionId]);
  },

  /** The newest session of the link still open for payment, to reuse on a page reload. */
  async openSession(q: Queryable, id: string): Promise<string | undefined> {
    const { rows } = await q.query<{ id: string }>(
      `SELECT id FROM client_sessions WHERE payment_link_id = $1 AND status = 'CREATED' AND payment_id IS NULL
          AND expires_at > now() + interval '5 minutes'
        ORDER BY created_at DESC LIMIT 1`, [id]);
    return rows[0]?.id;
  },
  /** A link's attempts: the payments made through its checkout sessions (declined ones too), newest first, at most 50. */
  async attempts(q: Queryable, entityId: string, id: string): Promise<LinkAttemptRow[]> {
    const { rows } = await q.query<LinkAttemptRow>(
      `SELECT p.id, p.created_at, p.amount, p.currency, p.authorization_status
         FROM client_sessions s JOIN payments p ON p.client_session_id = s.id
        WHERE s.payment_link_id = $1 AND s.entity_id = $2 AND p.entity_id = $2
        ORDER BY p.created_at DESC, p.id DESC LIMIT 50`, [id, entityId]);
    return rows;
  },
};
