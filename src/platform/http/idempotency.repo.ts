// SQL of idempotency_keys (idempotency.ts: the claims of the keyed routes whose resource
// has no key column). On the request's path: each function is its one statement's
// promise, with no await of its own; the caller reads the rows as before.
import type { QueryResult, Queryable } from '../db/index.ts';

export interface ClaimRow {
  claim_id: string;
  fingerprint: string;
  resource_id: string | null;
  completed_at: Date | null;
}

export const idempotencyRepo = {
  /** The key's claim in its scope (no row: unclaimed). */
  read(q: Queryable, entityId: string, scope: string, key: string): Promise<QueryResult<ClaimRow>> {
    return q.query<ClaimRow>(
      'SELECT claim_id, fingerprint, resource_id, completed_at FROM idempotency_keys WHERE entity_id = $1 AND scope = $2 AND key = $3',
      [entityId, scope, key]);
  },

  /** Claims the key: a row when it was free, none when it is claimed already. */
  claim(q: Queryable, entityId: string, scope: string, key: string, claimId: string, fingerprint: string): Promise<QueryResult<{ claim_id: string }>> {
    return q.query<{ claim_id: string }>(
      `INSERT INTO idempotency_keys (entity_id, scope, key, claim_id, fingerprint) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (entity_id, scope, key) DO NOTHING RETURNING claim_id`,
      [entityId, scope, key, claimId, fingerprint]);
  },

  /**
   * Takes over the claim `previousClaimId` when it is still running and was made at least
   * `staleMs` ago: a row when taken.
   */
  takeOver(q: Queryable, entityId: string, scope: string, key: string, claimId: string, fingerprint: string,
    previousClaimId: string, staleMs: number): Promise<QueryResult<{ claim_id: string }>> {
    return q.query<{ claim_id: string }>(
      `UPDATE idempotency_keys SET claim_id = $4, fingerprint = $5, claimed_at = now()
          WHERE entity_id = $1 AND scope = $2 AND key = $3 AND claim_id = $6 AND completed_at IS NULL
            AND claimed_at <= now() - $7::int * interval '1 millisecond'
          RETURNING claim_id`,
      [entityId, scope, key, claimId, fingerprint, previousClaimId, staleMs]);
  },

  /** Records what the claim's request created. */
  complete(q: Queryable, entityId: string, scope: string, key: string, claimId: string, resourceId: string): Promise<unknown> {
    return q.query(
      `UPDATE idempotency_keys SET resource_id = $5, completed_at = now()
            WHERE entity_id = $1 AND scope = $2 AND key = $3 AND claim_id = $4`,
      [entityId, scope, key, claimId, resourceId]);
  },

  /** Gives the claim back (its request created nothing). */
  release(q: Queryable, entityId: string, scope: string, key: string, claimId: string): Promise<unknown> {
    return q.query('DELETE FROM idempotency_keys WHERE entity_id = $1 AND scope = $2 AND key = $3 AND claim_id = $4',
      [entityId, scope, key, claimId]);
  },
};
