// SQL for client sessions.
import type { Queryable } from '../platform/db/index.ts';

/** A client session's status as stored; EXPIRED is read from a CREATED one past its expiry (effectiveStatus). */
export const STORED_SESSION_STATUSES = ['CREATED', 'SUBMITTED', 'ABORTED_BY_MERCHANT'] as const;
export type StoredSessionStatus = typeof STORED_SESSION_STATUSES[number];
/** Every status a client session shows (the API's enum). */
export const SESSION_STATUSES = [...STORED_SESSION_STATUSES, 'EXPIRED'] as const;
export type SessionStatus = typeof SESSION_STATUSES[number];

export interface ClientSessionRow {
  id: string;
  entity_id: string;
  status: StoredSessionStatus;
  amount: number;
  currency: string;
  capture_mode: string;
  integration_mode: string;
  allow_future_usage: boolean;
  order: Record<string, unknown> | null;
  customer: Record<string, unknown> | null;
  shopper_redirection_url: string | null;
  expires_at: Date;
  eligible_solutions: Array<{ partner: string; method: string }>;
  payment_id: string | null;
  payment_link_id: string | null;
  three_ds_authentication_options: Record<string, unknown> | null;
  version: number;
  created_at: Date;
  updated_at: Date;
}

export const SESSION_COLUMNS = `id, entity_id, status, amount, currency, capture_mode, integration_mode, allow_future_usage, "order", customer,
  shopper_redirection_url, expires_at, eligible_solutions, payment_id, payment_link_id, three_ds_authentication_options,
  version, created_at, updated_at`;

export type NewClientSession = Omit<ClientSessionRow, 'payment_id' | 'payment_link_id' | 'three_ds_authentication_options' | 'version' | 'created_at' | 'updated_at'>
  & { payment_link_id?: string | null; three_ds_authentication_options?: Record<string, unknown> | null };

/** The payments made on a session (attempts), and the authorization status of its latest one. */
export interface SessionAttempts {
  count: number;
  last_status: string | null;
}

export const clientSessionsRepo = {
  async attempts(q: Queryable, id: string): Promise<SessionAttempts> {
    const { rows } = await q.query<SessionAttempts>(
      `SELECT (SELECT count(*)::int FROM payments WHERE client_session_id = $1) AS count,
              (SELECT p.authorization_status FROM client_sessions c JOIN payments p ON p.id = c.payment_id WHERE c.id = $1) AS last_status`,
      [id],
    );
    return rows[0]!;
  },

  async insert(q: Queryable, s: NewClientSession): Promise<ClientSessionRow> {
    const { rows } = await q.query<ClientSessionRow>(
      `INSERT INTO client_sessions (id, entity_id, status, amount, currency, capture_mode, integration_mode, allow_future_usage,
         "order", customer, shopper_redirection_url, expires_at, eligible_solutions, payment_link_id, three_ds_authentication_options)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING ${SESSION_COLUMNS}`,
      [s.id, s.entity_id, s.status, s.amount, s.currency, s.capture_mode, s.integration_mode, s.allow_future_usage,
        s.order === null ? null : JSON.stringify(s.order), s.customer === null ? null : JSON.stringify(s.customer),
        s.shopper_redirection_url, s.expires_at, JSON.stringify(s.eligible_solutions), s.payment_link_id ?? null,
        s.three_ds_authentication_options ? JSON.stringify(s.three_ds_authentication_options) : null],
    );
    return rows[0]!;
  },

  async get(q: Queryable, entityId: string, id: string, lock = false): Promise<ClientSessionRow | undefined> {
    const { rows } = await q.query<ClientSessionRow>(
      `SELECT ${SESSION_COLUMNS} FROM client_sessions WHERE id = $1 AND entity_id = $2${lock ? ' FOR UPDATE' : ''}`,
      [id, entityId],
    );
    return rows[0];
  },

  /** For the browser path: the session by id alone (the widget credential is checked by the caller). */
  async getById(q: Queryable, id: string, lock = false): Promise<ClientSessionRow | undefined> {
    const { rows } = await q.query<ClientSessionRow>(`SELECT ${SESSION_COLUMNS} FROM client_sessions WHERE id = $1${lock ? ' FOR UPDATE' : ''}`, [id]);
    return rows[0];
  },

  async setStatus(q: Queryable, id: string, status: StoredSessionStatus, paymentId?: string): Promise<ClientSessionRow> {
    const { rows } = await q.query<ClientSessionRow>(
      `UPDATE client_sessions SET status = $2, payment_id = coalesce($3, payment_id), version = version + 1, updated_at = now()
        WHERE id = $1 RETURNING ${SESSION_COLUMNS}`,
      [id, status, paymentId ?? null],
    );
    return rows[0]!;
  },
};
