// SQL of payment events (payment-events.ts): the webhook of the payment link a payment
// was made through. On the money path: the statement's promise, no await of its own.
import type { QueryResult, Queryable } from '../platform/db/index.ts';

/** A payment link's own webhook (payment_links.webhook): its url, headers masked, their sealed values. */
export interface LinkWebhook { url: string; headers?: Array<{ name: string; values: string[] }>; headers_enc?: string | null }

export const paymentEventsRepo = {
  /** The webhook of the payment link whose client session this is (no row: not a link's session). */
  linkWebhook(q: Queryable, clientSessionId: string): Promise<QueryResult<{ webhook: LinkWebhook | null }>> {
    return q.query<{ webhook: LinkWebhook | null }>(
      `SELECT l.webhook FROM client_sessions s JOIN payment_links l ON l.id = s.payment_link_id WHERE s.id = $1`, [clientSessionId]);
  },
};
