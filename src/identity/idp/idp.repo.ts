// SQL of the identity provider.
import { randomUUID } from 'node:crypto';
import type { Queryable } from '../../platform/db/index.ts';

export interface UserRow {
  id: string;
  email: string;
  password_hash: string;
  given_name: string | null;
  family_name: string | null;
  email_verified: boolean;
  blocked: boolean;
  is_admin: boolean;
  created_at: Date;
}

export interface AppRow {
  client_id: string;
  name: string;
  secret_hash: string | null;
  secret_enc: string | null;
  first_party: boolean;
  callback_urls: string[];
  allowed_origins: string[];
  token_endpoint_auth_method: 'client_secret_basic' | 'client_secret_post' | 'none';
  response_types: string[];
  management_scopes: string[];
  id_token_alg: 'HS256' | 'RS256';
  /** Management API tokens issued before this are refused (null: none revoked). */
  tokens_not_before: Date | null;
  /** Management API tokens carry the generation they were issued in; revoke-tokens moves it on. */
  tokens_generation: number;
  /** The Management API application that registered it (null: the operator, the console or payd). */
  created_by: string | null;
  created_at: Date;
  /** The password grant is on for it (idp_password_grant_clients; opt-in, first-party confidential only). */
  password_grant: boolean;
}

export interface CodeRow {
  code_hash: string;
  client_id: string;
  user_id: string;
  redirect_uri: string;
  scope: string;
  nonce: string | null;
  code_challenge: string | null;
  auth_time: Date;
  expires_at: Date;
  used_at: Date | null;
  login_as_name: string | null;
  session_id: string | null;
  /** The authentication methods of the sign-in (RFC 8176), from its session. */
  amr: string[];
}

export interface RefreshRow {
  token_hash: string;
  family_id: string;
  code_hash: string | null;
  client_id: string;
  user_id: string;
  scope: string;
  auth_time: Date;
  amr: string[];
  expires_at: Date;
  used_at: Date | null;
  revoked_at: Date | null;
}

const USER_COLS = 'id, email, password_hash, given_name, family_name, email_verified, blocked, is_admin, created_at';
const APP_COLS = 'client_id, name, secret_hash, secret_enc, first_party, callback_urls, allowed_origins, token_endpoint_auth_method, response_types, management_scopes, id_token_alg, tokens_not_before, tokens_generation, created_by, created_at, '
  + 'EXISTS (SELECT 1 FROM idp_password_grant_clients g WHERE g.client_id = idp_applications.client_id) AS password_grant';

export const idpRepo = {
  /** Whether some application lists this origin among its Allowed Origins (CORS). */
  async originAllowed(q: Queryable, origin: string): Promise<boolean> {
    const { rows } = await q.query('SELECT 1 FROM idp_applications WHERE allowed_origins @> jsonb_build_array($1::text) AND deleted_at IS NULL LIMIT 1', [origin]);
    return rows.length > 0;
  },

  /** Whether some application lists this exact URL among its Allowed Callback URLs. */
  async callbackRegistered(q: Queryable, url: string): Promise<boolean> {
    const { rows } = await q.query('SELECT 1 FROM idp_applications WHERE callback_urls @> jsonb_build_array($1::text) LIMIT 1', [url]);
    return rows.length > 0;
  },

  async insertUser(q: Queryable, u: Omit<UserRow, 'created_at' | 'blocked'>): Promise<UserRow | undefined> {
    const { rows } = await q.query<UserRow>(
      `INSERT INTO idp_users (id, email, password_hash, given_name, family_name, email_verified, is_admin)
       VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT ((lower(email))) DO NOTHING RETURNING ${USER_COLS}`,
      [u.id, u.email, u.password_hash, u.given_name, u.family_name, u.email_verified, u.is_admin]);
    return rows[0];
  },
  async userByEmail(q: Queryable, email: string): Promise<UserRow | undefined> {
    const { rows } = await q.query<UserRow>(`SELECT ${USER_COLS} FROM idp_users WHERE lower(email) = lower($1)`, [email]);
    return rows[0];
  },
  async user(q: Queryable, id: string): Promise<UserRow | undefined> {
    const { rows } = await q.query<UserRow>(`SELECT ${USER_COLS} FROM idp_users WHERE id = $1`, [id]);
    return rows[0];
  },
  async insertApp(q: Queryable, a: Omit<AppRow, 'created_at' | 'tokens_not_before' | 'tokens_generation' | 'password_grant'>): Promise<AppRow> {
    const { rows } = await q.query<AppRow>(
      `INSERT INTO idp_applications (client_id, name, secret_hash, secret_enc, first_party, callback_urls, allowed_origins, token_endpoint_auth_method, response_types, management_scopes, id_token_alg, created_by)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING ${APP_COLS}`,
      [a.client_id, a.name, a.secret_hash, a.secret_enc, a.first_party, JSON.stringify(a.callback_urls), JSON.stringify(a.allowed_origins), a.token_endpoint_auth_method,
        JSON.stringify(a.response_types), JSON.stringify(a.management_scopes), a.id_token_alg, a.created_by]);
    return rows[0]!;
  },
  /** The console's own application (public client with PKCE), created once. */
  async ensureConsoleApp(q: Queryable, clientId: string, callback: string, origin: string, name = 'payd console'): Promise<void> {
    await q.query(
      `INSERT INTO idp_applications (client_id, name, first_party, callback_urls, allowed_origins, token_endpoint_auth_method, response_types)
       VALUES ($1, $4, true, $2, $3, 'none', '["code"]')
       ON CONFLICT (client_id) DO UPDATE SET callback_urls = EXCLUDED.callback_urls, allowed_origins = EXCLUDED.allowed_origins`,
      [clientId, JSON.stringify([callback]), JSON.stringify([origin]), name]);
  },
  async updateApp(q: Queryable, clientId: string, u: { name?: string | undefined; callback_urls?: string[] | undefined; allowed_origins?: string[] | undefined; first_party?: boolean | undefined; management_scopes?: string[] | undefined }): Promise<AppRow | undefined> {
    const { rows } = await q.query<AppRow>(
      `UPDATE idp_applications SET name = coalesce($2, name), callback_urls = coalesce($3::jsonb, callback_urls),
         allowed_origins = coalesce($4::jsonb, allowed_origins), first_party = coalesce($5, first_party),
         management_scopes = coalesce($6::jsonb, management_scopes)
        WHERE client_id = $1 AND deleted_at IS NULL RETURNING ${APP_COLS}`,
      [clientId, u.name ?? null, u.callback_urls ? JSON.stringify(u.callback_urls) : null, u.allowed_origins ? JSON.stringify(u.allowed_origins) : null, u.first_party ?? null,
        u.management_scopes ? JSON.stringify(u.management_scopes) : null]);
    return rows[0];
  },
  async audit(q: Queryable, e: { client_id: string; actor: string; action: string; changes: Record<string, unknown> }): Promise<void> {
    await q.query('INSERT INTO idp_application_audit (id, client_id, actor, action, changes) VALUES ($1, $2, $3, $4, $5)',
      [randomUUID(), e.client_id, e.actor, e.action, JSON.stringify(e.changes)]);
  },
  async auditOf(q: Queryable, clientId: string, limit: number): Promise<Array<{ id: string; actor: string; action: string; changes: Record<string, unknown>; at: Date }>> {
    const { rows } = await q.query<{ id: string; actor: string; action: string; changes: Record<string, unknown>; at: Date }>(
      'SELECT id, actor, action, changes, at FROM idp_application_audit WHERE client_id = $1 ORDER BY at DESC, id DESC LIMIT $2', [clientId, limit]);
    return rows;
  },
  /** Management API tokens of this application issued before now stop working. */
  async revokeTokens(q: Queryable, clientId: string): Promise<Date | undefined> {
    const { rows } = await q.query<{ tokens_not_before: Date }>(
      `UPDATE idp_applications SET tokens_not_before = now(), tokens_generation = tokens_generation + 1
        WHERE client_id = $1 AND deleted_at IS NULL RETURNING tokens_not_before`, [clientId]);
    return rows[0]?.tokens_not_before;
  },
  async replaceSecret(q: Queryable, clientId: string, hash: string, enc: string): Promise<AppRow | undefined> {
    const { rows } = await q.query<AppRow>(
      `UPDATE idp_applications SET secret_hash = $2, secret_enc = $3 WHERE client_id = $1 AND secret_hash IS NOT NULL AND deleted_at IS NULL RETURNING ${APP_COLS}`, [clientId, hash, enc]);
    return rows[0];
  },
  async apps(q: Queryable): Promise<AppRow[]> {
    const { rows } = await q.query<AppRow>(`SELECT ${APP_COLS} FROM idp_applications WHERE deleted_at IS NULL ORDER BY created_at, client_id`);
    return rows;
  },
  async app(q: Queryable, clientId: string): Promise<AppRow | undefined> {
    const { rows } = await q.query<AppRow>(`SELECT ${APP_COLS} FROM idp_applications WHERE client_id = $1 AND deleted_at IS NULL`, [clientId]);
    return rows[0];
  },
  /** Whether this client id was ever registered (deleted or not): its audit stays readable. */
  async appEverExisted(q: Queryable, clientId: string): Promise<boolean> {
    const { rows } = await q.query('SELECT 1 FROM idp_applications WHERE client_id = $1', [clientId]);
    return rows.length > 0;
  },
  /**
   * Deletes an application (the row stays, marked deleted: codes, tokens and the audit refer
   * to it): its unused codes are burnt, its access and refresh tokens revoked, the consents
   * given to it removed. Undefined when there is no such (live) application.
   */
  async deleteApp(q: Queryable, clientId: string): Promise<AppRow | undefined> {
    const { rows } = await q.query<AppRow>(
      `UPDATE idp_applications SET deleted_at = now(), tokens_not_before = now(), tokens_generation = tokens_generation + 1
        WHERE client_id = $1 AND deleted_at IS NULL RETURNING ${APP_COLS}`, [clientId]);
    if (!rows[0]) return undefined;
    await q.query('UPDATE idp_codes SET used_at = now() WHERE client_id = $1 AND used_at IS NULL', [clientId]);
    await q.query('UPDATE idp_tokens SET revoked_at = now() WHERE client_id = $1 AND revoked_at IS NULL', [clientId]);
    await q.query('UPDATE idp_refresh_tokens SET revoked_at = now() WHERE client_id = $1 AND revoked_at IS NULL', [clientId]);
    await q.query(`UPDATE idp_consents SET scopes = '[]', updated_at = now() WHERE client_id = $1`, [clientId]);
    return rows[0];
  },
  /** The scopes a user granted an application (empty when none). */
  async consentScopes(q: Queryable, userId: string, clientId: string): Promise<string[]> {
    const { rows } = await q.query<{ scopes: string[] }>('SELECT scopes FROM idp_consents WHERE user_id = $1 AND client_id = $2', [userId, clientId]);
    return rows[0]?.scopes ?? [];
  },
  /** Adds scopes to a user's grant to an application (the union with what was granted). */
  async grantConsent(q: Queryable, userId: string, clientId: string, scopes: string[]): Promise<void> {
    await q.query(
      `INSERT INTO idp_consents (user_id, client_id, scopes) VALUES ($1, $2, $3::jsonb)
       ON CONFLICT (user_id, client_id) DO UPDATE SET updated_at = now(),
         scopes = (SELECT coalesce(jsonb_agg(DISTINCT s ORDER BY s), '[]'::jsonb) FROM jsonb_array_elements_text(idp_consents.scopes || EXCLUDED.scopes) AS s)`,
      [userId, clientId, JSON.stringify([...new Set(scopes)].sort())]);
  },
  /** A user's grants, with the application names, newest first. */
  async consentsOf(q: Queryable, userId: string): Promise<Array<{ client_id: string; name: string; scopes: string[]; granted_at: Date; updated_at: Date }>> {
    const { rows } = await q.query<{ client_id: string; name: string; scopes: string[]; granted_at: Date; updated_at: Date }>(
      `SELECT c.client_id, a.name, c.scopes, c.granted_at, c.updated_at FROM idp_consents c JOIN idp_applications a ON a.client_id = c.client_id
        WHERE c.user_id = $1 AND a.deleted_at IS NULL AND c.scopes <> '[]'::jsonb ORDER BY c.updated_at DESC, c.client_id`, [userId]);
    return rows;
  },
  /**
   * Withdraws a user's grant to an application (its scopes emptied: the runtime role has
   * no DELETE on idp_consents, see docs/operations.md) and revokes the application's
   * tokens for the user.
   */
  async revokeConsent(q: Queryable, userId: string, clientId: string): Promise<boolean> {
    const { rowCount } = await q.query(`UPDATE idp_consents SET scopes = '[]', updated_at = now() WHERE user_id = $1 AND client_id = $2 AND scopes <> '[]'::jsonb`, [userId, clientId]);
    await q.query('UPDATE idp_refresh_tokens SET revoked_at = now() WHERE user_id = $1 AND client_id = $2 AND revoked_at IS NULL', [userId, clientId]);
    await q.query('UPDATE idp_tokens SET revoked_at = now() WHERE user_id = $1 AND client_id = $2 AND revoked_at IS NULL', [userId, clientId]);
    return rowCount > 0;
  },
  /** Locks the active (not blocked) administrators and returns their ids (the last-admin rule). */
  /**
   * Whether the user is privileged (authority.ts): a console administrator, a member of a
   * merchant's dashboard. The user's row is locked, so the answer holds until the
   * transaction that changes them ends.
   */
  async lockStanding(q: Queryable, id: string): Promise<{ is_admin: boolean; dashboard_member: boolean } | undefined> {
    const { rows } = await q.query<{ is_admin: boolean; dashboard_member: boolean }>(
      `SELECT u.is_admin, EXISTS (SELECT 1 FROM dashboard_members m WHERE m.user_id = u.id) AS dashboard_member
         FROM idp_users u WHERE u.id = $1 FOR UPDATE OF u`, [id]);
    return rows[0];
  },
  /**
   * What requires this user to keep a second factor, named for the user: a merchant team
   * whose dashboard requires one (dashboard_team_settings), or the console when
   * PAYD_CONSOLE_REQUIRE_MFA is on and the user is an administrator; undefined when nothing does.
   */
  async secondFactorRequiredBy(q: Queryable, userId: string, consoleRequires: boolean): Promise<string | undefined> {
    const { rows } = await q.query<{ name: string; is_admin: boolean }>(
      `SELECT u.is_admin, (SELECT e.name FROM dashboard_members m
                             JOIN dashboard_team_settings s ON s.entity_id = m.entity_id AND s.require_second_factor
                             JOIN entities e ON e.id = m.entity_id
                            WHERE m.user_id = u.id ORDER BY e.name LIMIT 1) AS name
         FROM idp_users u WHERE u.id = $1`, [userId]);
    const r = rows[0];
    if (r?.name) return `the team of ${r.name}`;
    if (r?.is_admin && consoleRequires) return 'the administration console';
    return undefined;
  },
  async lockActiveAdmins(q: Queryable): Promise<string[]> {
    const { rows } = await q.query<{ id: string }>('SELECT id FROM idp_users WHERE is_admin AND NOT blocked ORDER BY id FOR UPDATE');
    return rows.map((r) => r.id);
  },
  async insertSession(q: Queryable, id: string, userId: string, ttlSeconds: number, amr: readonly string[]): Promise<void> {
    await q.query(`INSERT INTO idp_login_sessions (id, user_id, expires_at, amr) VALUES ($1, $2, now() + make_interval(secs => $3), $4)`, [id, userId, ttlSeconds, amr]);
  },
  async session(q: Queryable, id: string): Promise<{ user_id: string; auth_time: Date; amr: string[] } | undefined> {
    const { rows } = await q.query<{ user_id: string; auth_time: Date; amr: string[] }>(
      'SELECT user_id, auth_time, amr FROM idp_login_sessions WHERE id = $1 AND expires_at > now()', [id]);
    return rows[0];
  },
  async deleteSession(q: Queryable, id: string): Promise<void> {
    await q.query('DELETE FROM idp_login_sessions WHERE id = $1', [id]);
  },
  async insertCode(q: Queryable, c: Omit<CodeRow, 'used_at' | 'expires_at' | 'login_as_name' | 'session_id'> & { login_as_name?: string | null; session_id?: string | null }, ttlSeconds: number): Promise<void> {
    await q.query(
      `INSERT INTO idp_codes (code_hash, client_id, user_id, redirect_uri, scope, nonce, code_challenge, auth_time, expires_at, login_as_name, session_id, amr)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now() + make_interval(secs => $9), $10, $11, $12)`,
      [c.code_hash, c.client_id, c.user_id, c.redirect_uri, c.scope, c.nonce, c.code_challenge, c.auth_time, ttlSeconds, c.login_as_name ?? null, c.session_id ?? null, c.amr]);
  },
  /** The sign-in session a code was issued from (the console binds its cookie to it). */
  async codeSession(q: Queryable, codeHash: string): Promise<string | undefined> {
    const { rows } = await q.query<{ session_id: string | null }>('SELECT session_id FROM idp_codes WHERE code_hash = $1', [codeHash]);
    return rows[0]?.session_id ?? undefined;
  },
  /**
   * Marks the code used in one row update (of two concurrent exchanges only one finds it
   * unused) and returns it, with whether it has expired by the database's clock; a code
   * already used is 'replayed'.
   */
  async useCode(q: Queryable, codeHash: string): Promise<(CodeRow & { expired: boolean }) | 'replayed' | 'unknown'> {
    const { rows } = await q.query<CodeRow & { expired: boolean }>(
      'UPDATE idp_codes SET used_at = now() WHERE code_hash = $1 AND used_at IS NULL RETURNING *, expires_at <= now() AS expired', [codeHash]);
    if (rows[0]) return rows[0];
    const seen = await q.query('SELECT 1 FROM idp_codes WHERE code_hash = $1', [codeHash]);
    return seen.rows.length > 0 ? 'replayed' : 'unknown';
  },
  async insertToken(q: Queryable, t: { jti: string; code_hash: string | null; client_id: string; user_id: string; ttlSeconds: number; login_as_name?: string | null; refresh_family?: string | null }): Promise<void> {
    await q.query(`INSERT INTO idp_tokens (jti, code_hash, client_id, user_id, expires_at, login_as_name, refresh_family) VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5), $6, $7)`,
      [t.jti, t.code_hash, t.client_id, t.user_id, t.ttlSeconds, t.login_as_name ?? null, t.refresh_family ?? null]);
  },
  async insertRefreshToken(q: Queryable, r: Omit<RefreshRow, 'expires_at' | 'used_at' | 'revoked_at' | 'expired'>, ttlSeconds: number): Promise<void> {
    await q.query(
      `INSERT INTO idp_refresh_tokens (token_hash, family_id, code_hash, client_id, user_id, scope, auth_time, amr, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now() + make_interval(secs => $9))`,
      [r.token_hash, r.family_id, r.code_hash, r.client_id, r.user_id, r.scope, r.auth_time, r.amr, ttlSeconds]);
  },
  /**
   * Marks a refresh token used in one row update (concurrent uses: one wins). 'unknown':
   * no such token; 'reused': it was used or revoked before (reuse detection).
   */
  async useRefreshToken(q: Queryable, tokenHash: string): Promise<(RefreshRow & { expired: boolean }) | 'unknown' | 'reused'> {
    const { rows } = await q.query<RefreshRow & { expired: boolean }>(
      `UPDATE idp_refresh_tokens SET used_at = now() WHERE token_hash = $1 AND used_at IS NULL AND revoked_at IS NULL
       RETURNING token_hash, family_id, code_hash, client_id, user_id, scope, auth_time, amr, expires_at, used_at, revoked_at, expires_at <= now() AS expired`, [tokenHash]);
    if (rows[0]) return rows[0];
    const { rows: known } = await q.query('SELECT 1 FROM idp_refresh_tokens WHERE token_hash = $1', [tokenHash]);
    return known.length ? 'reused' : 'unknown';
  },
  async refreshToken(q: Queryable, tokenHash: string): Promise<RefreshRow | undefined> {
    const { rows } = await q.query<RefreshRow>('SELECT token_hash, family_id, code_hash, client_id, user_id, scope, auth_time, amr, expires_at, used_at, revoked_at FROM idp_refresh_tokens WHERE token_hash = $1', [tokenHash]);
    return rows[0];
  },
  /** Revokes a refresh-token family: every refresh token of it and the access tokens issued in it. */
  /**
   * A refresh token used once, presented again by a client that lost the answer: locked,
   * and whether its use was less than graceSeconds ago (by the database's clock) and its
   * family is not revoked. undefined when it is not such a token.
   */
  async lockRecentlyUsedRefresh(q: Queryable, tokenHash: string, graceSeconds: number): Promise<(RefreshRow & { in_grace: boolean }) | undefined> {
    const { rows } = await q.query<RefreshRow & { in_grace: boolean }>(
      `SELECT token_hash, family_id, code_hash, client_id, user_id, scope, auth_time, amr, expires_at, used_at, revoked_at,
              (used_at > now() - make_interval(secs => $2) AND revoked_at IS NULL AND expires_at > now()) AS in_grace
         FROM idp_refresh_tokens WHERE token_hash = $1 AND used_at IS NOT NULL FOR UPDATE`, [tokenHash, graceSeconds]);
    return rows[0];
  },
  /** Revokes the family's refresh tokens not used yet (the successor of a token presented again in its grace). */
  async revokeUnusedOfFamily(q: Queryable, familyId: string): Promise<void> {
    await q.query('UPDATE idp_refresh_tokens SET revoked_at = now() WHERE family_id = $1 AND used_at IS NULL AND revoked_at IS NULL', [familyId]);
  },
  async revokeFamily(q: Queryable, familyId: string): Promise<void> {
    await q.query('UPDATE idp_refresh_tokens SET revoked_at = now() WHERE family_id = $1 AND revoked_at IS NULL', [familyId]);
    await q.query('UPDATE idp_tokens SET revoked_at = now() WHERE refresh_family = $1 AND revoked_at IS NULL', [familyId]);
  },
  /** The families started by an authorization code (revoked when the code is replayed). */
  async revokeFamiliesOfCode(q: Queryable, codeHash: string): Promise<void> {
    const { rows } = await q.query<{ family_id: string }>('SELECT DISTINCT family_id FROM idp_refresh_tokens WHERE code_hash = $1', [codeHash]);
    for (const r of rows) await idpRepo.revokeFamily(q, r.family_id);
  },
  async users(q: Queryable, limit: number): Promise<UserRow[]> {
    const { rows } = await q.query<UserRow>(`SELECT ${USER_COLS} FROM idp_users ORDER BY created_at, id LIMIT $1`, [limit]);
    return rows;
  },
  async updateUser(q: Queryable, id: string, u: { given_name?: string | undefined; family_name?: string | undefined; email_verified?: boolean | undefined; blocked?: boolean | undefined; password_hash?: string | undefined; is_admin?: boolean | undefined }): Promise<UserRow | undefined> {
    const { rows } = await q.query<UserRow>(
      `UPDATE idp_users SET given_name = coalesce($2, given_name), family_name = coalesce($3, family_name),
         email_verified = coalesce($4, email_verified), blocked = coalesce($5, blocked), password_hash = coalesce($6, password_hash),
         is_admin = coalesce($7, is_admin), updated_at = now()
        WHERE id = $1 RETURNING ${USER_COLS}`,
      [id, u.given_name ?? null, u.family_name ?? null, u.email_verified ?? null, u.blocked ?? null, u.password_hash ?? null, u.is_admin ?? null]);
    return rows[0];
  },
  async revokeTokensOfCode(q: Queryable, codeHash: string): Promise<number> {
    const { rowCount } = await q.query('UPDATE idp_tokens SET revoked_at = now() WHERE code_hash = $1 AND revoked_at IS NULL', [codeHash]);
    return rowCount;
  },
  async revokeToken(q: Queryable, jti: string, clientId: string): Promise<void> {
    await q.query('UPDATE idp_tokens SET revoked_at = now() WHERE jti = $1 AND client_id = $2 AND revoked_at IS NULL', [jti, clientId]);
  },
  /** Not revoked, not expired, and its user not blocked. */
  async tokenActive(q: Queryable, jti: string): Promise<boolean> {
    const { rows } = await q.query(
      `SELECT 1 FROM idp_tokens t JOIN idp_users u ON u.id = t.user_id
        WHERE t.jti = $1 AND t.revoked_at IS NULL AND t.expires_at > now() AND NOT u.blocked`, [jti]);
    return rows.length > 0;
  },
  /** Records a sign-up from this address; the number of them in the window, this one included. */
  async recordSignup(q: Queryable, ip: string, windowSeconds: number): Promise<number> {
    const { rows } = await q.query<{ n: number }>(
      `WITH added AS (INSERT INTO idp_signups (ip) VALUES ($1) RETURNING 1)
       SELECT (SELECT count(*)::int FROM idp_signups WHERE ip = $1 AND created_at > now() - make_interval(secs => $2)) + 1 AS n FROM added`,
      [ip, windowSeconds]);
    return rows[0]!.n;
  },
  /** After a password change or a block: the user's sign-in sessions end, refresh and access tokens are revoked. */
  async endCredentials(q: Queryable, userId: string, keepSession?: string): Promise<void> {
    await q.query('DELETE FROM idp_login_sessions WHERE user_id = $1 AND id IS DISTINCT FROM $2', [userId, keepSession ?? null]);
    await q.query('UPDATE idp_refresh_tokens SET revoked_at = now() WHERE user_id = $1 AND revoked_at IS NULL', [userId]);
    await q.query('UPDATE idp_tokens SET revoked_at = now() WHERE user_id = $1 AND revoked_at IS NULL', [userId]);
  },
  async insertEvent(q: Queryable, e: { id: string; user_id: string; type: string; auth_type: string; client_id: string | null; login_as_profile_id: string | null; login_as_actor?: string | null; amr?: readonly string[] | null; second_factor?: string | null }): Promise<void> {
    await q.query(`INSERT INTO idp_user_events (id, user_id, type, auth_type, client_id, login_as_profile_id, login_as_actor, amr, second_factor) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      [e.id, e.user_id, e.type, e.auth_type, e.client_id, e.login_as_profile_id, e.login_as_actor ?? null, e.amr?.length ? e.amr : null, e.second_factor ?? null]);
  },
  async events(q: Queryable, userId: string): Promise<Array<{ id: string; date: Date; type: string; user_id: string; auth_type: string; login_as_profile_id: string | null; login_as_actor: string | null; amr: string[] | null; second_factor: string | null }>> {
    const { rows } = await q.query<{ id: string; date: Date; type: string; user_id: string; auth_type: string; login_as_profile_id: string | null; login_as_actor: string | null; amr: string[] | null; second_factor: string | null }>(
      'SELECT id, date, type, user_id, auth_type, login_as_profile_id, login_as_actor, amr, second_factor FROM idp_user_events WHERE user_id = $1 ORDER BY date DESC LIMIT 100', [userId]);
    return rows;
  },
};
