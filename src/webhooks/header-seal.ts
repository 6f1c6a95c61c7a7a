// Extra webhook header values are secrets (they often carry a merchant's credential):
// stored sealed with the master key (AES-256-GCM) and opened only to send a call. The
// associated data is the entity id as stored, so a sealed list only opens for its own
// tenant; it is the same for an entity's endpoint, its payment links and their events,
// because an event copies its link's sealed list as it is (the outbox has no key).
// What the API shows (and the plain headers columns keep): the names, each value masked.
import type { Db } from '../platform/db/index.ts';
import { decrypt, encrypt } from '../platform/crypto/secrets.ts';
import { headersRepo } from './endpoints.repo.ts';
import type { WebhookHeader } from './target.ts';

/** What every header value is replaced with in API responses and plain columns. */
export const HEADER_MASK = '[redacted]';

const aad = (entityId: string) => `webhook-headers:${entityId}`;

/** The sealed JSON of the headers, or null when there are none. */
export function sealHeaders(masterKey: Buffer, entityId: string, headers: readonly WebhookHeader[] | null | undefined): string | null {
  if (!headers || headers.length === 0) return null;
  return encrypt(masterKey, JSON.stringify(headers.map((h) => ({ name: h.name, values: [...h.values] }))), aad(entityId));
}

export function openHeaders(masterKey: Buffer, entityId: string, sealed: string): WebhookHeader[] {
  return JSON.parse(decrypt(masterKey, sealed, aad(entityId))) as WebhookHeader[];
}

/** The names, each value replaced by HEADER_MASK (as many values as there are). */
export function maskHeaders(headers: readonly WebhookHeader[] | null | undefined): WebhookHeader[] {
  return (headers ?? []).map((h) => ({ name: h.name, values: h.values.map(() => HEADER_MASK) }));
}

const BATCH = 200;

/**
 * Seals the header values still stored in plain text (rows written before migration
 * 0014). Every process runs it at start-up; each row is updated only if it is still
 * plain, so concurrent runs are harmless. Returns how many rows it sealed.
 */
export async function sealPlainHeaders(db: Db, masterKey: Buffer): Promise<number> {
  let sealed = 0;
  for (const table of ['webhook_endpoints', 'webhook_events', 'payment_links'] as const) {
    for (;;) {
      const rows = await headersRepo.plain(db, table, BATCH);
      let progress = 0;
      for (const r of rows) {
        const enc = sealHeaders(masterKey, r.entity_id, r.headers);
        if (await headersRepo.seal(db, table, r.key, r.headers, maskHeaders(r.headers), enc)) progress += 1;
      }
      sealed += progress;
      if (rows.length < BATCH || progress === 0) break;
    }
  }
  return sealed;
}
