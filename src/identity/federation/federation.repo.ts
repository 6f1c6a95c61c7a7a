// SQL of social login (federation.ts): the upstream providers (idp_upstream_providers,
// their client secrets sealed), the pending states (idp_federation_states, by their
// SHA-256, used once) and the links of upstream identities to users (idp_federated_identities).
import type { Queryable } from '../../platform/db/index.ts';
import type { AuthRequest } from '../idp/idp.service.ts';

export interface ProviderRow { id: string; name: string; issuer: string; client_id: string; client_secret_enc: string; scopes: string; created_at: Date }

export type ProviderSummary = Omit<ProviderRow, 'client_secret_enc'>;

export interface PendingState { provider_id: string; nonce: string; code_verifier: string; request: AuthRequest }

export const federationRepo = {
  /** The providers without their secrets, by name. */
  async providers(q: Queryable): Promise<ProviderSummary[]> {
    const { rows } = await q.query<ProviderRow>('SELECT id, name, issuer, client_id, scopes, created_at FROM idp_upstream_providers ORDER BY name, id');
    return rows;
  },

  /** Adds a provider: false when its id is taken. */
  async insertProvider(q: Queryable, p: { id: string; name: string; issuer: string; client_id: string; client_secret_enc: string; scopes: string }): Promise<boolean> {
    const { rowCount } = await q.query(
      `INSERT INTO idp_upstream_providers (id, name, issuer, client_id, client_secret_enc, scopes) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING`,
      [p.id, p.name, p.issuer, p.client_id, p.client_secret_enc, p.scopes]);
    return rowCount > 0;
  },

  async provider(q: Queryable, id: string): Promise<ProviderRow | undefined> {
    const { rows } = await q.query<ProviderRow>('SELECT * FROM idp_upstream_providers WHERE id = $1', [id]);
    return rows[0];
  },

  async insertState(q: Queryable, s: { stateHash: string; providerId: string; nonce: string; codeVerifier: string; request: AuthRequest; ttlSeconds: number }): Promise<void> {
    await q.query(
      `INSERT INTO idp_federation_states (state_hash, provider_id, nonce, code_verifier, request, expires_at)
       VALUES ($1, $2, $3, $4, $5, now() + make_interval(secs => $6))`,
      [s.stateHash, s.providerId, s.nonce, s.codeVerifier, JSON.stringify(s.request), s.ttlSeconds]);
  },

  /** Marks used the states expired over a day ago and never used. */
  async retireExpiredStates(q: Queryable): Promise<void> {
    await q.query(`UPDATE idp_federation_states SET used_at = now() WHERE expires_at < now() - interval '1 day' AND used_at IS NULL`);
  },

  /** Uses the state once (unused, unexpired): what it kept, else undefined. */
  async useState(q: Queryable, stateHash: string): Promise<PendingState | undefined> {
    const { rows } = await q.query<PendingState>(
      `UPDATE idp_federation_states SET used_at = now() WHERE state_hash = $1 AND used_at IS NULL AND expires_at > now()
       RETURNING provider_id, nonce, code_verifier, request`, [stateHash]);
    return rows[0];
  },

  /** The user the upstream identity is linked to, if any. */
  async linkedUser(q: Queryable, providerId: string, subject: string): Promise<string | undefined> {
    const { rows } = await q.query<{ user_id: string }>('SELECT user_id::text FROM idp_federated_identities WHERE provider_id = $1 AND subject = $2', [providerId, subject]);
    return rows[0]?.user_id;
  },

  /** Links the upstream identity to the user (an existing link stays). */
  async link(q: Queryable, providerId: string, subject: string, userId: string): Promise<void> {
    await q.query(
      'INSERT INTO idp_federated_identities (provider_id, subject, user_id) VALUES ($1, $2, $3) ON CONFLICT (provider_id, subject) DO NOTHING',
      [providerId, subject, userId]);
  },
};
