// Template (docs/connector-template/README.md): the flows of a connector for a fictional
// acquirer "Acme" whose API takes JSON over HTTPS, an Idempotency-Key header, and signs
// its webhooks with an HMAC: the calls (authorize, capture, refund, void, sync,
// notifications). What is sent and how answers read is acme-mappings.ts; its
// PAYD_PARTNERS entry is acme-config.ts. Copy the three to src/partners/<name>/ and adapt
// each ADAPT.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type {
  AuthorizeRequest, FollowUpRequest, PartnerConnector, PartnerNotification, PartnerResult, SyncRequest,
} from '../../src/partners/port.ts';
import { type AcmeObject, authorizationBody, notificationsOf, resultOf } from './acme-mappings.ts';

export interface AcmeOptions {
  name?: string | undefined;
  apiBase: string;
  apiKey: string;
  webhookSecret?: string | undefined;
  timeoutMs?: number | undefined;
}

/** The outcome of a call is unknown (network error, timeout, 5xx, 429): throw, payd keeps it PENDING and syncs later. */
class AcmeUnknownOutcome extends Error {}

export class AcmeConnector implements PartnerConnector {
  readonly name: string;
  readonly methods = ['CARD'] as const;
  // ADAPT: the currencies and amount bounds the partner accepts (used by eligibility).
  readonly limits = { currencies: ['EUR', 'USD'], min_amount: 1, max_amount: 99_999_999 };

  constructor(private readonly options: AcmeOptions) {
    this.name = options.name ?? 'acme';
  }

  private async call(method: string, path: string, key: string | undefined, body?: unknown): Promise<{ status: number; json: AcmeObject }> {
    let res: Response;
    try {
      res = await fetch(`${this.options.apiBase}${path}`, {
        method,
        headers: { authorization: `Bearer ${this.options.apiKey}`, 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 30_000),
      });
    } catch (err) {
      throw new AcmeUnknownOutcome(`Acme unreachable: ${(err as Error).message}`);
    }
    if (res.status >= 500 || res.status === 429 || res.status === 409) throw new AcmeUnknownOutcome(`Acme answered ${res.status}`);
    return { status: res.status, json: (await res.json()) as AcmeObject };
  }

  async authorize(req: AuthorizeRequest): Promise<PartnerResult> {
    if (req.instrument.type !== 'CARD') return { outcome: 'ERROR', partner_status: 'unsupported', status_code: 'UNSUPPORTED_INSTRUMENT' };
    // payd's key is the partner's idempotency key, and it is kept on the partner's object so that sync can find it.
    const { json } = await this.call('POST', '/payments', req.key, authorizationBody(req));
    const r = resultOf(json, 'authorized');
    return req.card ? { ...r, card: req.card } : r; // ADAPT: merge the card facts the partner returns (funding type, issuer country)
  }

  async capture(req: FollowUpRequest): Promise<PartnerResult> {
    const { json } = await this.call('POST', `/payments/${req.authorization_reference}/captures`, req.key, { amount: req.amount, metadata: { payd_key: req.key } });
    return resultOf(json, 'succeeded');
  }

  async refund(req: FollowUpRequest): Promise<PartnerResult> {
    const { json } = await this.call('POST', `/payments/${req.authorization_reference}/refunds`, req.key, { amount: req.amount, metadata: { payd_key: req.key } });
    return resultOf(json, 'succeeded');
  }

  async void(req: FollowUpRequest): Promise<PartnerResult> {
    const { json } = await this.call('POST', `/payments/${req.authorization_reference}/cancels`, req.key, { metadata: { payd_key: req.key } });
    return resultOf(json, 'succeeded');
  }

  /** ADAPT: find the call by payd's key (a search endpoint, or the authorization's operations). NOT_FOUND: never received. */
  async sync(req: SyncRequest): Promise<PartnerResult | 'NOT_FOUND'> {
    const { status, json } = await this.call('GET', `/operations/by-key/${encodeURIComponent(req.key)}`, undefined);
    if (status === 404) return 'NOT_FOUND';
    return resultOf(json, req.kind === 'AUTHORIZATION' ? 'authorized' : 'succeeded');
  }

  /** ADAPT: verify the partner's signature scheme exactly as it documents it, on the raw bytes. */
  async notification(rawBody: string, headers: Record<string, string | string[] | undefined>): Promise<PartnerNotification[] | 'UNVERIFIED'> {
    const signature = headers['acme-signature'];
    if (!this.options.webhookSecret || typeof signature !== 'string' || !/^[0-9a-f]{64}$/.test(signature)) return 'UNVERIFIED';
    const expected = createHmac('sha256', this.options.webhookSecret).update(rawBody).digest();
    if (!timingSafeEqual(expected, Buffer.from(signature, 'hex'))) return 'UNVERIFIED';
    return notificationsOf(JSON.parse(rawBody) as { type: string; object: AcmeObject });
  }
}
