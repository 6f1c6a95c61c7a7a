// Dashboard members (an entity's team; the SQL of dashboard_members, its invitations and
// its action log): a user of payd's identity provider belongs to one or more entities
// with a role. admin: keys, webhooks, users; operator: capture, refund, void, links;
// viewer: read only. Every dashboard request is authorised here, on the server, by role
// and entity (an entity's pages are a 404 to anyone who is not its member).
import { randomUUID } from 'node:crypto';
import type { Db, Queryable } from '../platform/db/index.ts';

export const ROLES = ['admin', 'operator', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

/** What each role may do (a role may do what the roles after it may). */
const RANK: Record<Role, number> = { admin: 3, operator: 2, viewer: 1 };
export const can = (role: Role, needed: Role) => RANK[role] >= RANK[needed];

/** A membership of the signed-in user; second_factor_required: the team's setting (a sign-in with a second factor only). */
/** time_zone: the merchant's IANA zone (Team page), in which the dashboard shows every date. */
export interface Membership { entity_id: string; entity_name: string; role: Role; second_factor_required: boolean; time_zone: string }
export interface Member { user_id: string; email: string; role: Role; invited_by: string | null; created_at: Date; has_second_factor: boolean }

export const membersRepo = {
  async upsert(q: Queryable, entityId: string, userId: string, role: Role, invitedBy: string | null): Promise<void> {
    await q.query(
      `INSERT INTO dashboard_members (entity_id, user_id, role, invited_by) VALUES ($1, $2, $3, $4)
       ON CONFLICT (entity_id, user_id) DO UPDATE SET role = EXCLUDED.role`,
      [entityId, userId, role, invitedBy]);
  },
  async remove(q: Queryable, entityId: string, userId: string): Promise<boolean> {
    const { rowCount } = await q.query('DELETE FROM dashboard_members WHERE entity_id = $1 AND user_id = $2', [entityId, userId]);
    return rowCount > 0;
  },
  async of(q: Queryable, entityId: string): Promise<Member[]> {
    const { rows } = await q.query<Member>(
      `SELECT m.user_id::text, u.email, m.role, m.invited_by, m.created_at,
              (EXISTS (SELECT 1 FROM idp_mfa_totp t WHERE t.user_id = m.user_id AND t.confirmed_at IS NOT NULL)
               OR EXISTS (SELECT 1 FROM idp_passkeys k WHERE k.user_id = m.user_id)) AS has_second_factor
         FROM dashboard_members m JOIN idp_users u ON u.id = m.user_id
        WHERE m.entity_id = $1 ORDER BY m.created_at, u.email`, [entityId]);
    return rows;
  },
  async membershipsOf(q: Queryable, userId: string): Promise<Membership[]> {
    const { rows } = await q.query<Membership>(
      `SELECT m.entity_id::text, e.name AS entity_name, m.role, COALESCE(s.require_second_factor, false) AS second_factor_required,
              COALESCE(s.time_zone, 'UTC') AS time_zone
         FROM dashboard_members m JOIN entities e ON e.id = m.entity_id LEFT JOIN dashboard_team_settings s ON s.entity_id = m.entity_id
        WHERE m.user_id = $1 ORDER BY e.name, e.id`, [userId]);
    return rows;
  },
  /** The team's setting: its members must sign in with a second factor. */
  async setSecondFactorRequired(q: Queryable, entityId: string, required: boolean, byUserId: string): Promise<void> {
    await q.query(
      `INSERT INTO dashboard_team_settings (entity_id, require_second_factor, updated_by, updated_at) VALUES ($1, $2, $3, now())
       ON CONFLICT (entity_id) DO UPDATE SET require_second_factor = EXCLUDED.require_second_factor, updated_by = EXCLUDED.updated_by, updated_at = now()`,
      [entityId, required, byUserId]);
  },
  /** The merchant's time zone (an IANA name the caller checked). */
  async setTimeZone(q: Queryable, entityId: string, zone: string, byUserId: string): Promise<void> {
    await q.query(
      `INSERT INTO dashboard_team_settings (entity_id, time_zone, updated_by, updated_at) VALUES ($1, $2, $3, now())
       ON CONFLICT (entity_id) DO UPDATE SET time_zone = EXCLUDED.time_zone, updated_by = EXCLUDED.updated_by, updated_at = now()`,
      [entityId, zone, byUserId]);
  },
  /** The database's spelling of the zone (the home page buckets days with AT TIME ZONE), or undefined when it does not know it. */
  async zoneName(q: Queryable, zone: string): Promise<string | undefined> {
    const { rows } = await q.query<{ name: string }>('SELECT name FROM pg_timezone_names WHERE lower(name) = lower($1) ORDER BY name = $1 DESC LIMIT 1', [zone]);
    return rows[0]?.name;
  },
  async roleOf(q: Queryable, entityId: string, userId: string): Promise<Role | undefined> {
    const { rows } = await q.query<{ role: Role }>('SELECT role FROM dashboard_members WHERE entity_id = $1 AND user_id = $2', [entityId, userId]);
    return rows[0]?.role;
  },
  async admins(q: Queryable, entityId: string): Promise<number> {
    const { rows } = await q.query<{ n: number }>(`SELECT count(*)::int AS n FROM dashboard_members WHERE entity_id = $1 AND role = 'admin'`, [entityId]);
    return rows[0]!.n;
  },

  /**
   * Changes a member's role, or removes them (role undefined), unless that would leave the
   * entity without an admin. The entity's member rows are locked for the check and the
   * write, so two admins demoting each other at once cannot both succeed.
   */
  async change(db: Db, entityId: string, userId: string, role: Role | undefined): Promise<'done' | 'not_member' | 'last_admin'> {
    return db.transaction(async (tx) => {
      const { rows } = await tx.query<{ user_id: string; role: Role }>(
        'SELECT user_id::text, role FROM dashboard_members WHERE entity_id = $1 ORDER BY user_id FOR UPDATE', [entityId]);
      const current = rows.find((r) => r.user_id === userId);
      if (!current) return 'not_member';
      if (current.role === 'admin' && role !== 'admin' && rows.filter((r) => r.role === 'admin').length <= 1) return 'last_admin';
      if (role === undefined) await tx.query('DELETE FROM dashboard_members WHERE entity_id = $1 AND user_id = $2', [entityId, userId]);
      else await tx.query('UPDATE dashboard_members SET role = $3 WHERE entity_id = $1 AND user_id = $2', [entityId, userId, role]);
      return 'done';
    });
  },

  /** An invitation waiting for its mailed link to be redeemed (dashboard_invitations, migration 0037). */
  async insertInvitation(q: Queryable, i: { reset_hash: string; entity_id: string; user_id: string; role: Role; invited_by: string }): Promise<void> {
    await q.query('INSERT INTO dashboard_invitations (reset_hash, entity_id, user_id, role, invited_by) VALUES ($1, $2, $3, $4, $5)',
      [i.reset_hash, i.entity_id, i.user_id, i.role, i.invited_by]);
  },
  /**
   * The user's invitations whose own link was redeemed (a password chosen through it)
   * become memberships; how many. A link voided otherwise (another reset, a password
   * change by whoever holds the password) starts nothing.
   */
  async acceptRedeemed(q: Queryable, userId: string): Promise<number> {
    const { rows } = await q.query<{ n: number }>(
      `WITH accepted AS (
         DELETE FROM dashboard_invitations i USING idp_password_resets r
          WHERE i.user_id = $1 AND r.token_hash = i.reset_hash AND r.redeemed
          RETURNING i.entity_id, i.user_id, i.role, i.invited_by),
       added AS (
         INSERT INTO dashboard_members (entity_id, user_id, role, invited_by) SELECT entity_id, user_id, role, invited_by FROM accepted
         ON CONFLICT (entity_id, user_id) DO NOTHING RETURNING 1)
       SELECT count(*)::int AS n FROM added`, [userId]);
    return rows[0]!.n;
  },
  /** Invitations of the entity still waiting for their link (the Team page lists them). */
  async pendingOf(q: Queryable, entityId: string): Promise<Array<{ email: string; role: Role; created_at: Date }>> {
    const { rows } = await q.query<{ email: string; role: Role; created_at: Date }>(
      `SELECT u.email, i.role, i.created_at FROM dashboard_invitations i JOIN idp_users u ON u.id = i.user_id
         JOIN idp_password_resets r ON r.token_hash = i.reset_hash
        WHERE i.entity_id = $1 AND r.used_at IS NULL AND r.expires_at > now() ORDER BY i.created_at`, [entityId]);
    return rows;
  },

  /** Records a dashboard action once per form key; false when that form was already recorded. */
  async recordAction(q: Queryable, a: { entity_id: string; user_id: string; user_email: string; action: string; payment_id: string | null; idempotency_key: string | null; amount: number | null }): Promise<boolean> {
    const { rowCount } = await q.query(
      `INSERT INTO dashboard_actions (id, entity_id, user_id, user_email, action, payment_id, idempotency_key, amount)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (entity_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING`,
      [randomUUID(), a.entity_id, a.user_id, a.user_email, a.action, a.payment_id, a.idempotency_key, a.amount]);
    return rowCount > 0;
  },
  async actionDone(q: Queryable, entityId: string, key: string): Promise<boolean> {
    const { rows } = await q.query('SELECT 1 FROM dashboard_actions WHERE entity_id = $1 AND idempotency_key = $2', [entityId, key]);
    return rows.length > 0;
  },
  async actionsOf(q: Queryable, entityId: string, paymentId: string): Promise<Array<{ user_email: string; action: string; amount: number | null; idempotency_key: string | null; created_at: Date }>> {
    const { rows } = await q.query<{ user_email: string; action: string; amount: number | null; idempotency_key: string | null; created_at: Date }>(
      `SELECT user_email, action, amount, idempotency_key, created_at FROM dashboard_actions WHERE entity_id = $1 AND payment_id = $2 ORDER BY created_at`,
      [entityId, paymentId]);
    return rows.map((r) => ({ ...r, amount: r.amount === null ? null : Number(r.amount) }));
  },
};
