// Developer commands of the payd CLI, clients of a running payd (they use the merchant's
// API key, like any integration, and never open the database):
//
//   payd listen --forward-to http://localhost:4243/webhooks
//     reads the entity's events from GET /v2/events as they appear, signs each as the
//     webhook would (payd-signature with the secret you give, or one printed at start)
//     and POSTs it to your local receiver: no public URL needed.
//   payd trigger payment.captured
//     makes the API calls after which payd emits that event.
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';

import type { EventTypeName } from '../webhooks/catalogue.ts';
import { readProfile } from './profile.ts';

export class CliError extends Error {}

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

interface Conn {
  base: string;
  apiKey: string;
}

interface Options {
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
}

/**
 * The key and the URL of a client command: --api-key, else the key of the profile --profile
 * names, else PAYD_API_KEY, else the profile PAYD_PROFILE names or "default" (payd login,
 * profile.ts). The URL: --base-url, else the profile's when its key is used, else PAYD_URL,
 * else http://localhost:$PORT.
 */
export function conn(values: Options['values'], env: NodeJS.ProcessEnv): Conn {
  const named = values.profile as string | undefined;
  let apiKey = values['api-key'] as string | undefined;
  let profileBase: string | undefined;
  if (!apiKey && (named !== undefined || !env.PAYD_API_KEY)) {
    const p = readProfile(env, named);
    apiKey = p?.profile.api_key;
    profileBase = p?.profile.base_url;
  }
  apiKey ??= env.PAYD_API_KEY;
  if (!apiKey) throw new CliError('an API key is needed: --api-key payd_sk_..., PAYD_API_KEY, or a profile (payd login --api-key payd_sk_...)');
  const base = ((values['base-url'] as string | undefined) ?? profileBase ?? env.PAYD_URL ?? `http://localhost:${env.PORT ?? 3000}`).replace(/\/+$/, '');
  return { base, apiKey };
}

/** A small API client: a cached token, JSON in and out, a clear error. */
export class Api {
  private token: string | undefined;
  constructor(private readonly c: Conn) {}

  get base(): string { return this.c.base; }

  /**
   * A call as a shopper's browser makes it (no merchant credential): a page (GET, its
   * HTML) or, with a client session's credential, the checkout's browser API (POST JSON).
   */
  async shopper(path: string, session?: string, body?: unknown): Promise<string> {
    const res = await fetch(this.c.base + path, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { ...(session ? { 'x-payd-session': session } : {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    }).catch((err: Error) => { throw new CliError(`payd at ${this.c.base} did not answer: ${err.cause instanceof Error ? err.cause.message : err.message}`); });
    const text = await res.text();
    if (!res.ok) throw new CliError(`${body === undefined ? 'GET' : 'POST'} ${path}: HTTP ${res.status} ${text.slice(0, 300)}`);
    return text;
  }

  async call<T>(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, body?: unknown, idempotencyKey?: string): Promise<T> {
    const res = await fetch(this.c.base + path, {
      method,
      headers: {
        authorization: `Bearer ${await this.accessToken()}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...(idempotencyKey ? { 'x-idempotency-key': idempotencyKey } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    }).catch((err: Error) => { throw new CliError(`payd at ${this.c.base} did not answer: ${err.cause instanceof Error ? err.cause.message : err.message}`); });
    const text = await res.text();
    if (!res.ok) {
      let detail = text;
      try { detail = (JSON.parse(text) as { detail?: string }).detail ?? text; } catch { /* text as it is */ }
      throw new CliError(`${method} ${path}: HTTP ${res.status} ${detail}`);
    }
    return (text ? JSON.parse(text) : undefined) as T;
  }

  private async accessToken(): Promise<string> {
    if (this.token) return this.token;
    const res = await fetch(`${this.c.base}/oauth/token`, {
      method: 'POST',
      headers: { 'x-api-key': this.c.apiKey, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials',
    }).catch((err: Error) => { throw new CliError(`payd at ${this.c.base} did not answer: ${err.cause instanceof Error ? err.cause.message : err.message}`); });
    const body = await res.json().catch(() => ({})) as { access_token?: string; detail?: string };
    if (!res.ok || !body.access_token) throw new CliError(`the API key was refused (HTTP ${res.status}${body.detail ? `: ${body.detail}` : ''})`);
    this.token = body.access_token;
    return this.token;
  }
}

interface EventItem { id: string; type: string; created_at: string }
interface EventPage { data: EventItem[]; has_more: boolean; next_cursor: string | null }

const stamp = () => new Date().toISOString().replace('T', ' ').slice(0, 19);

/** The payd-signature header of a body, as the webhook dispatcher writes it. */
export function signature(secret: string, body: string, t = Math.floor(Date.now() / 1000)): string {
  return `t=${t},v1=${createHmac('sha256', secret).update(`${t}.`).update(body).digest('hex')}`;
}

export async function listen(argv: string[], env: NodeJS.ProcessEnv, out: (line: string) => void, stop: AbortSignal): Promise<void> {
  const { values } = parseArgs({
    args: argv, allowPositionals: false,
    options: {
      'forward-to': { type: 'string' }, 'api-key': { type: 'string' }, 'base-url': { type: 'string' }, profile: { type: 'string' },
      secret: { type: 'string' }, events: { type: 'string' }, 'poll-ms': { type: 'string' },
    },
  });
  const target = values['forward-to'];
  if (!target || !/^https?:\/\//.test(target)) throw new CliError('--forward-to <http(s) URL of your webhook receiver> is required');
  const api = new Api(conn(values, env));
  const only = values.events ? new Set(values.events.split(',').map((s) => s.trim()).filter(Boolean)) : undefined;
  const pollMs = Math.max(100, Number(values['poll-ms'] ?? 1000));
  let secret = values.secret ?? env.PAYD_WEBHOOK_SECRET;
  if (!secret) {
    secret = `whsec_${randomBytes(24).toString('base64url')}`;
    out(`Your receiver's signing secret for this session is ${secret} (give --secret or PAYD_WEBHOOK_SECRET to keep your own)`);
  }
  // From now on; events appear at commit, so each poll looks back a minute and skips
  // the ids it has already forwarded.
  const startedAt = Date.now();
  const seen = new Set<string>();
  let newest = startedAt;
  await api.call('GET', '/v2/events?limit=1'); // the key works and payd answers, before "Ready"
  out(`Ready! Forwarding your entity's events to ${target} (Ctrl-C to stop)`);
  while (!stop.aborted) {
    let cursor: string | null = null;
    const since = new Date(Math.max(startedAt, newest - 60_000) - 1000).toISOString();
    do {
      const page: EventPage = await api.call('GET', `/v2/events?order=asc&limit=100&created_gte=${encodeURIComponent(since)}${cursor ? `&starting_after=${cursor}` : ''}`);
      for (const event of page.data) {
        if (seen.has(event.id) || Date.parse(event.created_at) < startedAt) continue;
        seen.add(event.id);
        newest = Math.max(newest, Date.parse(event.created_at));
        if (only && !only.has(event.type)) continue;
        await forward(target, secret, event, out);
      }
      cursor = page.has_more ? page.next_cursor : null;
    } while (cursor && !stop.aborted);
    if (seen.size > 50_000) seen.clear(); // bounded; the one-minute look-back is far shorter
    // One abort listener per wait, removed when the wait ends either way (a listener left
    // on `stop` by each poll added up for as long as listen ran).
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        stop.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, pollMs);
      stop.addEventListener('abort', done, { once: true });
    });
  }
}

async function forward(target: string, secret: string, event: EventItem, out: (line: string) => void): Promise<void> {
  const body = JSON.stringify(event); // the webhook body: the events API serves exactly it
  out(`${stamp()}   --> ${event.type} [${event.id}]`);
  try {
    const res = await fetch(target, {
      method: 'POST',
      headers: {
        'content-type': 'application/json', 'user-agent': 'payd-listen/1', 'payd-signature': signature(secret, body),
        'payd-event-id': event.id, 'payd-event-type': event.type, 'payd-delivery-id': randomUUID(),
      },
      body,
      signal: AbortSignal.timeout(10_000),
    });
    await res.arrayBuffer().catch(() => undefined);
    out(`${stamp()}  <--  [${res.status}] POST ${target} [${event.id}]`);
  } catch (err) {
    const e = err as Error & { cause?: Error };
    out(`${stamp()}  <--  [ERR] POST ${target} [${event.id}]: ${e.cause?.message ?? e.message}`);
  }
}

const card = (number: string) => ({ type: 'CARD', number, expiry_month: '12', expiry_year: String(new Date().getFullYear() + 3), cvv: '123' });

/** What a trigger may override (payd trigger --amount, --currency, --webhook-endpoint). */
export interface TriggerOptions { amount: number; currency: string; webhookEndpoint?: string | undefined }

const cardPayment = (number: string, capture_mode: 'MANUAL' | 'AUTOMATIC' = 'MANUAL') => (o: TriggerOptions) => ({
  amount: o.amount, currency: o.currency, capture_mode, order: { reference: `trigger-${Date.now()}` },
  split: [{ partner: 'card-sim', method: 'CARD', amount: o.amount, instrument: card(number) }],
});
/**
 * Gift card + card: an operation the card declines while the gift card accepts it ends in
 * CONFLICT. The gift card takes a third of the amount, at most 10.00 (gift-sim: EUR only).
 */
const splitPayment = (cardNumber: string, capture_mode: 'MANUAL' | 'AUTOMATIC') => (o: TriggerOptions) => {
  if (o.currency !== 'EUR') throw new CliError(`--currency ${o.currency}: this event needs a gift card, and the gift card simulator takes EUR only`);
  if (o.amount < 3) throw new CliError('--amount: this event splits the payment between a gift card and a card, so at least 3');
  const gift = Math.min(1000, Math.floor(o.amount / 3));
  return {
    amount: o.amount, currency: o.currency, capture_mode, order: { reference: `trigger-${Date.now()}` }, split: [
      { partner: 'gift-sim', method: 'GIFT_CARD', amount: gift, instrument: { type: 'GIFT_CARD', number: `6036${String(Date.now()).slice(-11)}7` } },
      { partner: 'card-sim', method: 'CARD', amount: o.amount - gift, instrument: card(cardNumber) },
    ],
  };
};

type Step = (api: Api, o: TriggerOptions) => Promise<string>;
type Body = (o: TriggerOptions) => object;
interface Made { id: string }

const pay = (body: Body): Step => async (api, o) => (await api.call<Made>('POST', '/v2/payments', body(o), randomUUID())).id;
const thenOp = (body: Body, op: 'captures' | 'refunds' | 'voids', withAmount = false): Step => async (api, o) => {
  const id = await pay(body)(api, o);
  await api.call('POST', `/v2/payments/${id}/${op}`, withAmount ? { amount: o.amount } : {}, randomUUID());
  return id;
};
const link = async (api: Api, o: TriggerOptions) =>
  api.call<Made>('POST', '/v2/payment-links', { amount: o.amount, currency: o.currency, shopper_redirection_url: 'https://shop.example/thanks' }, randomUUID());
/**
 * A payment link, then a shopper paying it with a test card as the customer page's widget
 * does: the page (/pay/{id}) mounts a client session, whose credential submits the payment.
 */
const linkPaidWith = (number: string): Step => async (api, o) => {
  const l = await link(api, o);
  const page = await api.shopper(`/pay/${l.id}`);
  const session = /data-payd-session="([^"]+)"/.exec(page)?.[1];
  if (!session) throw new CliError(`the payment link's page (${api.base}/pay/${l.id}) offered no payment form`);
  await api.shopper('/checkout/v1/session/payments', session,
    { split: [{ partner: 'card-sim', method: 'CARD', amount: o.amount, instrument: card(number) }] });
  return l.id;
};

/** The calls after which payd emits each event (test cards: docs/test-cards.md). */
export const TRIGGERS: Record<EventTypeName, { what: string; run: Step }> = {
  'payment.authorized': { what: 'a card payment', run: pay(cardPayment('4242424242424242')) },
  'payment.refused': { what: 'a card payment the issuer declines', run: pay(cardPayment('4000000000000002')) },
  'payment.failed': { what: 'a card payment the acquirer fails', run: pay(cardPayment('4000000000000119')) },
  'payment.captured': { what: 'a card payment, then its capture', run: thenOp(cardPayment('4242424242424242'), 'captures', true) },
  'payment.refunded': { what: 'an automatically captured card payment, then its refund', run: thenOp(cardPayment('4242424242424242', 'AUTOMATIC'), 'refunds') },
  'payment.voided': { what: 'a card payment, then its void', run: thenOp(cardPayment('4242424242424242'), 'voids') },
  'payment.capture_failed': { what: 'a payment by a card whose captures are declined, then a capture', run: thenOp(cardPayment('4000000000000341'), 'captures', true) },
  'payment.refund_failed': { what: 'a captured payment by a card whose refunds are declined, then a refund', run: thenOp(cardPayment('4000000000005126', 'AUTOMATIC'), 'refunds') },
  'payment.void_failed': { what: 'a payment by a card whose voids are declined, then a void', run: thenOp(cardPayment('4000000000000770'), 'voids') },
  'payment.capture_conflict': { what: 'a gift card + card payment, then a capture the card declines', run: thenOp(splitPayment('4000000000000341', 'MANUAL'), 'captures', true) },
  'payment.refund_conflict': { what: 'a captured gift card + card payment, then a refund the card declines', run: thenOp(splitPayment('4000000000005126', 'AUTOMATIC'), 'refunds') },
  'payment.void_conflict': { what: 'a gift card + card payment, then a void the card declines', run: thenOp(splitPayment('4000000000000770', 'MANUAL'), 'voids') },
  'payment_link.paid': { what: 'a payment link, then a shopper paying it by card', run: linkPaidWith('4242424242424242') },
  'payment_link.payment_failed': { what: 'a payment link, then a shopper whose card is declined', run: linkPaidWith('4000000000000002') },
  'payment_link.cancelled': {
    what: 'a payment link, then its cancellation',
    run: async (api, o) => {
      const l = await link(api, o);
      await api.call('POST', `/v2/payment-links/${l.id}/cancel`);
      return l.id;
    },
  },
  'webhook_endpoint.test': {
    what: 'a test event to a webhook endpoint (--webhook-endpoint, else your first one)',
    run: async (api, o) => {
      let id = o.webhookEndpoint;
      if (!id) {
        const page = await api.call<{ data: Made[] }>('GET', '/v2/webhook-endpoints?limit=1');
        id = page.data[0]?.id;
        if (!id) throw new CliError('webhook_endpoint.test goes to a webhook endpoint, and you have none: payd webhook-endpoints create --url ...');
      }
      await api.call('POST', `/v2/webhook-endpoints/${id}/test`, undefined, randomUUID());
      return id;
    },
  },
};

export async function trigger(argv: string[], env: NodeJS.ProcessEnv, out: (line: string) => void): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv, allowPositionals: true,
    options: {
      'api-key': { type: 'string' }, 'base-url': { type: 'string' }, profile: { type: 'string' },
      amount: { type: 'string' }, currency: { type: 'string' }, 'webhook-endpoint': { type: 'string' },
    },
  });
  const [type] = positionals;
  const known = Object.keys(TRIGGERS).join(', ');
  if (!type) throw new CliError(`which event? payd trigger <event>, one of: ${known}`);
  const t = Object.hasOwn(TRIGGERS, type) ? TRIGGERS[type as EventTypeName] : undefined;
  if (!t) throw new CliError(`payd trigger cannot make "${type}"; it makes: ${known}`);
  if (values.amount !== undefined && !/^[1-9]\d{0,13}$/.test(values.amount)) throw new CliError('--amount: an amount in minor units (1050 is 10.50 EUR, 1000 is ¥1,000)');
  if (values.currency !== undefined && !/^[A-Za-z]{3}$/.test(values.currency)) throw new CliError('--currency: a three-letter ISO 4217 code (EUR, USD, GBP, CHF, JPY)');
  if (values['webhook-endpoint'] !== undefined && !UUID.test(values['webhook-endpoint'])) throw new CliError('--webhook-endpoint: a webhook endpoint id (uuid)');
  const options: TriggerOptions = {
    amount: values.amount === undefined ? 2000 : Number(values.amount),
    currency: (values.currency ?? 'EUR').toUpperCase(),
    webhookEndpoint: values['webhook-endpoint'],
  };
  const api = new Api(conn(values, env));
  out(`Making ${t.what}...`);
  const id = await t.run(api, options);
  out(`Done: ${type} will be sent for ${id} (see payd listen, or GET /v2/events?type=${type})`);
}
