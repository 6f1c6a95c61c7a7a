// The payd client: the API key exchanged for a token (cached, renewed before it
// expires), one idempotency key per logical operation kept across retries, retries with
// jittered backoff that honour Retry-After, the first call's outcome fetched on a 409
// write-conflict, typed errors, and async iteration over lists. Only `fetch` is needed.
import {
  ConnectionError, errorFor, IdempotencyError, PaydError, type Problem,
} from './errors.ts';
import type {
  CaptureParams, ClientSession, ClientSessionListParams, CreateClientSessionParams, CreatePaymentLinkParams, CreatePaymentParams,
  EligibleSolutions, EligibleSolutionsParams, EventListParams, Payment, PaymentLink, PaymentLinkListParams, PaymentListParams, PaymentOperation,
  RefundParams, RotateWebhookSecretParams, SavedCard, SavedCardListParams, SetWebhookEndpointParams, SigningJwks, VoidParams, WebhookEndpoint, WebhookEvent, WebhookSecret,
  CreatedWebhookEndpoint, CreateWebhookEndpointParams, UpdateWebhookEndpointParams, WebhookEndpointItem, WebhookEndpointListParams,
  WebhookEndpointSecret, WebhookEndpointTest, EventResent, ResendEventParams,
} from './types.ts';

export interface PaydOptions {
  /** The merchant's API key (payd_sk_...). */
  apiKey: string;
  /** payd's base URL, e.g. https://payd.example.com (PAYD_BASE_URL of the server). */
  baseUrl: string;
  /** Retries after the first attempt (default 3). */
  maxRetries?: number;
  /** Time limit of each attempt in milliseconds (default 30 000). */
  timeoutMs?: number;
  /** First backoff step in milliseconds (default 300); each retry doubles it, with jitter. */
  retryBaseMs?: number;
  /** A fetch of your own (default: globalThis.fetch). */
  fetch?: typeof fetch;
}

export interface ListPage<T> {
  object: 'list';
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}

/** The answer of a capture, refund or void. */
export interface OperationResult {
  payment: Payment;
  /** The capture, refund or void this call created (or, replayed, the first call created). */
  operationId: string;
  /** true when payd had already processed this idempotency key: the outcome is the first call's. */
  replayed: boolean;
}

export interface IdempotentOptions {
  /**
   * One key per logical operation (derive it from your own capture or refund id). When
   * you give none, the client makes one for this call and keeps it across its retries;
   * give your own to stay at most once across restarts of your process.
   */
  idempotencyKey?: string;
}

/** Query values: arrays are sent comma-separated, Dates as ISO 8601. */
type Query = Record<string, string | number | boolean | Date | readonly string[] | undefined>;

function queryValue(v: string | number | boolean | Date | readonly string[]): string {
  if (v instanceof Date) return v.toISOString();
  if (Array.isArray(v)) return v.join(',');
  return String(v);
}

interface Call {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  query?: Query | undefined;
  body?: unknown;
  idempotencyKey?: string | undefined;
  headers?: Record<string, string>;
  /** A lost answer may be retried: reads, and writes carrying an idempotency key. */
  retrySafe: boolean;
  /** Authenticate with the API key itself rather than a token. */
  apiKeyAuth?: boolean;
}

interface Answer {
  status: number;
  headers: Headers;
  body: unknown;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Errors where the request surely never reached payd (nothing to repeat). */
function neverSent(err: unknown): boolean {
  const code = (err as { cause?: { code?: string } }).cause?.code;
  return code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN';
}

export class Payd {
  readonly payments: Payments;
  readonly clientSessions: ClientSessions;
  readonly paymentLinks: PaymentLinks;
  readonly savedCards: SavedCards;
  readonly events: Events;
  /** @deprecated One endpoint per entity: use webhookEndpoints (it lists this one with is_default true). */
  readonly webhookEndpoint: WebhookEndpointApi;
  readonly webhookEndpoints: WebhookEndpoints;

  private readonly base: string;
  private readonly maxRetries: number;
  private readonly timeoutMs: number;
  private readonly retryBaseMs: number;
  private readonly fetchImpl: typeof fetch;
  private token: { value: string; renewAt: number } | undefined;
  private tokenPending: Promise<string> | undefined;

  constructor(private readonly options: PaydOptions) {
    if (!options.apiKey) throw new TypeError('Payd: apiKey is required');
    this.base = options.baseUrl.replace(/\/+$/, '');
    this.maxRetries = options.maxRetries ?? 3;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.retryBaseMs = options.retryBaseMs ?? 300;
    this.fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.payments = new Payments(this);
    this.clientSessions = new ClientSessions(this);
    this.paymentLinks = new PaymentLinks(this);
    this.savedCards = new SavedCards(this);
    this.events = new Events(this);
    this.webhookEndpoint = new WebhookEndpointApi(this);
    this.webhookEndpoints = new WebhookEndpoints(this);
  }

  /** Eligible partner and method pairs for an order and customer. */
  eligibleSolutions(params: EligibleSolutionsParams): Promise<EligibleSolutions> {
    return this.json({ method: 'POST', path: '/v2/eligible-solutions', body: params, retrySafe: true });
  }

  /** The keys that verify service-redirection-data tokens. */
  signingJwks(): Promise<SigningJwks> {
    return this.json({ method: 'GET', path: '/v2/signing-jwks', retrySafe: true, apiKeyAuth: true });
  }

  /** @internal */
  async json<T>(call: Call): Promise<T> {
    return (await this.call(call)).body as T;
  }

  /** @internal One logical call: its attempts, retries and error. */
  async call(call: Call): Promise<Answer> {
    let renewedToken = false;
    for (let attempt = 0; ; attempt++) {
      const last = attempt >= this.maxRetries;
      let res: Response;
      try {
        res = await this.send(call);
      } catch (err) {
        if (err instanceof PaydError) throw err; // the token request's own error, after its retries
        if (!last && (call.retrySafe || neverSent(err))) {
          await sleep(this.backoff(attempt));
          continue;
        }
        throw new ConnectionError(`payd did not answer ${call.method} ${call.path}: ${(err as Error).message}`, 0, undefined, undefined, { cause: err });
      }
      const requestId = res.headers.get('x-request-id') ?? undefined;
      const text = await res.text();
      let body: unknown;
      try {
        body = text === '' ? undefined : JSON.parse(text);
      } catch {
        body = text;
      }
      if (res.ok) return { status: res.status, headers: res.headers, body };
      if (res.status === 401 && !call.apiKeyAuth && !renewedToken) {
        // The token may have been revoked or signed with a retired key: one fresh token.
        renewedToken = true;
        this.token = undefined;
        attempt--;
        continue;
      }
      const retryable = res.status === 429 || res.status === 503 || (res.status >= 500 && call.retrySafe);
      if (retryable && !last) {
        await sleep(this.retryAfter(res) ?? this.backoff(attempt));
        continue;
      }
      const problem = typeof body === 'object' && body !== null && 'status' in body ? body as Problem : undefined;
      throw errorFor(res.status, problem, requestId);
    }
  }

  private async send(call: Call): Promise<Response> {
    const url = new URL(this.base + call.path);
    for (const [k, v] of Object.entries(call.query ?? {})) if (v !== undefined) url.searchParams.set(k, queryValue(v));
    const headers: Record<string, string> = { accept: 'application/json', ...call.headers };
    if (call.apiKeyAuth) headers['x-api-key'] = this.options.apiKey;
    else headers.authorization = `Bearer ${await this.accessToken()}`;
    if (call.idempotencyKey) headers['x-idempotency-key'] = call.idempotencyKey;
    if (call.body !== undefined) headers['content-type'] = 'application/json';
    return this.fetchImpl(url, {
      method: call.method,
      headers,
      ...(call.body !== undefined ? { body: JSON.stringify(call.body) } : {}),
      signal: AbortSignal.timeout(this.timeoutMs),
    });
  }

  /** A valid access token: cached, renewed a minute before it expires (or at 90% of its life). */
  private async accessToken(): Promise<string> {
    if (this.token && Date.now() < this.token.renewAt) return this.token.value;
    this.tokenPending ??= this.fetchToken().finally(() => { this.tokenPending = undefined; });
    return this.tokenPending;
  }

  private async fetchToken(): Promise<string> {
    for (let attempt = 0; ; attempt++) {
      let res: Response;
      try {
        res = await this.fetchImpl(`${this.base}/oauth/token`, {
          method: 'POST',
          headers: { 'x-api-key': this.options.apiKey, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
          body: 'grant_type=client_credentials',
          signal: AbortSignal.timeout(this.timeoutMs),
        });
      } catch (err) {
        if (attempt < this.maxRetries) {
          await sleep(this.backoff(attempt));
          continue;
        }
        throw new ConnectionError(`payd did not answer POST /oauth/token: ${(err as Error).message}`, 0, undefined, undefined, { cause: err });
      }
      const body = await res.json().catch(() => undefined) as { access_token?: string; expires_in?: number } & Partial<Problem> | undefined;
      if (res.ok && body?.access_token) {
        const life = (body.expires_in ?? 3600) * 1000;
        this.token = { value: body.access_token, renewAt: Date.now() + Math.min(life - 60_000, life * 0.9) };
        return body.access_token;
      }
      if ((res.status === 429 || res.status >= 500) && attempt < this.maxRetries) {
        await sleep(this.retryAfter(res) ?? this.backoff(attempt));
        continue;
      }
      throw errorFor(res.status, body && typeof body.status === 'number' ? body as Problem : undefined, res.headers.get('x-request-id') ?? undefined);
    }
  }

  /** Jittered exponential backoff: base * 2^attempt, between half and all of it, at most 10 s. */
  private backoff(attempt: number): number {
    const ceiling = Math.min(10_000, this.retryBaseMs * 2 ** attempt);
    return ceiling / 2 + Math.random() * (ceiling / 2);
  }

  private retryAfter(res: Response): number | undefined {
    const header = res.headers.get('retry-after');
    if (!header) return undefined;
    const seconds = /^\d+$/.test(header) ? Number(header) : (Date.parse(header) - Date.now()) / 1000;
    return Number.isFinite(seconds) ? Math.min(30, Math.max(0, seconds)) * 1000 : undefined;
  }

  /** @internal Async iteration over a list endpoint, page after page. */
  async *iterate<T>(path: string, query: Query): AsyncGenerator<T> {
    let cursor: string | undefined;
    for (;;) {
      const page = await this.json<ListPage<T>>({ method: 'GET', path, query: { ...query, ...(cursor ? { starting_after: cursor } : {}) }, retrySafe: true });
      yield* page.data;
      if (!page.has_more || !page.next_cursor) return;
      cursor = page.next_cursor;
    }
  }

  /**
   * @internal A creating write with an idempotency key, kept across retries. A 409
   * write-conflict with same_request true (this call is the first request again: its
   * answer was lost) gives the first outcome through onReplay; any other 409
   * write-conflict (the key came with another request) is thrown as IdempotencyError,
   * never turned into another call's resource.
   */
  async idempotent<T>(call: Omit<Call, 'retrySafe' | 'idempotencyKey'>, key: string | undefined,
    onReplay: ((resourceId: string) => Promise<T>) | undefined, onAnswer: (answer: Answer) => T | Promise<T>): Promise<T> {
    const idempotencyKey = key ?? crypto.randomUUID();
    try {
      return await onAnswer(await this.call({ ...call, idempotencyKey, retrySafe: true }));
    } catch (err) {
      if (onReplay && err instanceof IdempotencyError && err.resourceId && err.sameRequest === true) return onReplay(err.resourceId);
      throw err;
    }
  }
}

const enc = encodeURIComponent;

class Payments {
  constructor(private readonly c: Payd) {}

  /**
   * Creates a payment. Retried safely: the idempotency key is kept across retries, and
   * when payd already processed it for this same request (a lost answer, or your own late
   * retry) the payment the first call created is returned. A key that came with another
   * request throws IdempotencyError (resourceId: that request's payment). A payment still
   * being authorized (PENDING without a redirection) is read again a few times before it
   * is returned.
   */
  create(params: CreatePaymentParams, opts: IdempotentOptions = {}): Promise<Payment> {
    return this.c.idempotent<Payment>({ method: 'POST', path: '/v2/payments', body: params }, opts.idempotencyKey,
      (paymentId) => this.settled(paymentId), (a) => a.body as Payment);
  }

  /** The payment; with maxAgeSeconds, payd serves stored data without asking the partners. */
  get(id: string, opts: { maxAgeSeconds?: number } = {}): Promise<Payment> {
    return this.c.json({
      method: 'GET', path: `/v2/payments/${enc(id)}`, retrySafe: true,
      ...(opts.maxAgeSeconds !== undefined ? { headers: { 'cache-control': `max-age=${opts.maxAgeSeconds}` } } : {}),
    });
  }

  capture(id: string, params: CaptureParams, opts: IdempotentOptions = {}): Promise<OperationResult> {
    return this.operate(id, 'captures', params, opts);
  }

  refund(id: string, params: RefundParams = {}, opts: IdempotentOptions = {}): Promise<OperationResult> {
    return this.operate(id, 'refunds', params, opts);
  }

  void(id: string, params: VoidParams = {}, opts: IdempotentOptions = {}): Promise<OperationResult> {
    return this.operate(id, 'voids', params, opts);
  }

  /** One capture, refund or void. */
  operation(id: string, operationId: string): Promise<PaymentOperation> {
    return this.c.json({ method: 'GET', path: `/v2/payments/${enc(id)}/operations/${enc(operationId)}`, retrySafe: true });
  }

  list(query: PaymentListParams = {}): Promise<ListPage<Payment>> {
    return this.c.json({ method: 'GET', path: '/v2/payments', query, retrySafe: true });
  }

  /** Every payment the filters select, newest first, page after page: `for await (const p of payd.payments.iterate())`. */
  iterate(query: PaymentListParams = {}): AsyncGenerator<Payment> {
    return this.c.iterate('/v2/payments', query);
  }

  private async operate(id: string, kind: 'captures' | 'refunds' | 'voids', params: object, opts: IdempotentOptions): Promise<OperationResult> {
    return this.c.idempotent<OperationResult>({ method: 'POST', path: `/v2/payments/${enc(id)}/${kind}`, body: params }, opts.idempotencyKey,
      async (resourceId) => ({ payment: await this.get(id), operationId: resourceId, replayed: true }),
      (a) => ({ payment: a.body as Payment, operationId: a.headers.get('x-created-operation-id') ?? '', replayed: false }));
  }

  private async settled(paymentId: string): Promise<Payment> {
    let payment = await this.get(paymentId);
    for (let i = 0; i < 5 && payment.authorization.status === 'PENDING' && !payment.authorization.redirection; i++) {
      await sleep(200 * 2 ** i);
      payment = await this.get(paymentId);
    }
    return payment;
  }
}

class ClientSessions {
  constructor(private readonly c: Payd) {}
  /** Creates a client session; retried with its idempotency key, a retry of a lost answer returns the first session (IdempotencyError for a key reused by another request). */
  create(params: CreateClientSessionParams, opts: IdempotentOptions = {}): Promise<ClientSession> {
    return this.c.idempotent<ClientSession>({ method: 'POST', path: '/v2/client-sessions', body: params }, opts.idempotencyKey,
      (id) => this.get(id), (a) => a.body as ClientSession);
  }
  get(id: string): Promise<ClientSession> {
    return this.c.json({ method: 'GET', path: `/v2/client-sessions/${enc(id)}`, retrySafe: true });
  }
  abort(id: string): Promise<ClientSession> {
    // Aborting twice answers the aborted session: safe to retry.
    return this.c.json({ method: 'POST', path: `/v2/client-sessions/${enc(id)}/abort`, body: { status: 'ABORTED_BY_MERCHANT' }, retrySafe: true });
  }
  list(query: ClientSessionListParams = {}): Promise<ListPage<ClientSession>> {
    return this.c.json({ method: 'GET', path: '/v2/client-sessions', query, retrySafe: true });
  }
  iterate(query: ClientSessionListParams = {}): AsyncGenerator<ClientSession> {
    return this.c.iterate('/v2/client-sessions', query);
  }
}

class PaymentLinks {
  constructor(private readonly c: Payd) {}
  /** Creates a payment link; retried with its idempotency key, a retry of a lost answer returns the first link (IdempotencyError for a key reused by another request). */
  create(params: CreatePaymentLinkParams, opts: IdempotentOptions = {}): Promise<PaymentLink> {
    return this.c.idempotent<PaymentLink>({ method: 'POST', path: '/v2/payment-links', body: params }, opts.idempotencyKey,
      (id) => this.get(id), (a) => a.body as PaymentLink);
  }
  get(id: string): Promise<PaymentLink> {
    return this.c.json({ method: 'GET', path: `/v2/payment-links/${enc(id)}`, retrySafe: true });
  }
  cancel(id: string): Promise<PaymentLink> {
    return this.c.json({ method: 'POST', path: `/v2/payment-links/${enc(id)}/cancel`, retrySafe: false });
  }
  list(query: PaymentLinkListParams = {}): Promise<ListPage<PaymentLink>> {
    return this.c.json({ method: 'GET', path: '/v2/payment-links', query, retrySafe: true });
  }
  iterate(query: PaymentLinkListParams = {}): AsyncGenerator<PaymentLink> {
    return this.c.iterate('/v2/payment-links', query);
  }
}

/**
 * A customer's saved cards: made by a payment with save_token (allow_future_usage) that
 * the partner kept; pay with one through payments.create with an instrument
 * { type: 'SAVED_CARD', saved_card_id, cvv? , initiator? }.
 */
class SavedCards {
  constructor(private readonly c: Payd) {}
  /** The customer's saved cards (by customer_reference, or customer_email), newest first. */
  async list(query: SavedCardListParams): Promise<SavedCard[]> {
    return (await this.c.json<{ data: SavedCard[] }>({ method: 'GET', path: '/v2/saved-cards', query: query as Query, retrySafe: true })).data;
  }
  get(id: string): Promise<SavedCard> {
    return this.c.json({ method: 'GET', path: `/v2/saved-cards/${enc(id)}`, retrySafe: true });
  }
  /**
   * Deletes a saved card (it can no longer pay; its partner forgets it). Sent with an
   * idempotency key and retried with it; when payd had already deleted it with that key
   * (the answer was lost), it resolves all the same. A card that is not there (another
   * entity's, or deleted before) throws NotFoundError.
   */
  async delete(id: string, opts: IdempotentOptions = {}): Promise<void> {
    await this.c.idempotent<void>({ method: 'DELETE', path: `/v2/saved-cards/${enc(id)}` }, opts.idempotencyKey, async () => undefined, () => undefined);
  }
}

/**
 * Your webhook endpoints (at most 16; docs/webhooks.md): each receives the event types
 * of its enabled_events, signed with its own secret.
 */
class WebhookEndpoints {
  constructor(private readonly c: Payd) {}
  /**
   * Creates an endpoint; its signing secret is in this answer only. Sent with an
   * idempotency key and retried with it: it creates at most one. When payd had already
   * created it with that key (the answer was lost), the secret cannot be shown again:
   * IdempotencyError (resourceId: the endpoint; rotate its secret to get a new one).
   */
  create(params: CreateWebhookEndpointParams, opts: IdempotentOptions = {}): Promise<CreatedWebhookEndpoint> {
    return this.c.idempotent<CreatedWebhookEndpoint>({ method: 'POST', path: '/v2/webhook-endpoints', body: params }, opts.idempotencyKey,
      undefined, (a) => a.body as CreatedWebhookEndpoint);
  }
  list(query: WebhookEndpointListParams = {}): Promise<ListPage<WebhookEndpointItem>> {
    return this.c.json({ method: 'GET', path: '/v2/webhook-endpoints', query, retrySafe: true });
  }
  iterate(query: WebhookEndpointListParams = {}): AsyncGenerator<WebhookEndpointItem> {
    return this.c.iterate('/v2/webhook-endpoints', query);
  }
  get(id: string): Promise<WebhookEndpointItem> {
    return this.c.json({ method: 'GET', path: `/v2/webhook-endpoints/${enc(id)}`, retrySafe: true });
  }
  /** Changes the fields given (PATCH: the same call twice is the same change). */
  update(id: string, params: UpdateWebhookEndpointParams): Promise<WebhookEndpointItem> {
    return this.c.json({ method: 'PATCH', path: `/v2/webhook-endpoints/${enc(id)}`, body: params, retrySafe: true });
  }
  async delete(id: string): Promise<void> {
    await this.c.call({ method: 'DELETE', path: `/v2/webhook-endpoints/${enc(id)}`, retrySafe: true });
  }
  /** A new signing secret, in this answer only; the previous one keeps signing for previous_secret_valid_seconds (default 24 h). */
  rotateSecret(id: string, params: RotateWebhookSecretParams = {}, opts: IdempotentOptions = {}): Promise<WebhookEndpointSecret> {
    return this.c.idempotent<WebhookEndpointSecret>({ method: 'POST', path: `/v2/webhook-endpoints/${enc(id)}/secret/rotate`, body: params },
      opts.idempotencyKey, undefined, (a) => a.body as WebhookEndpointSecret);
  }
  /**
   * Sends a webhook_endpoint.test event to this endpoint only; resolves once payd has queued
   * it (202). Sent with an idempotency key and retried with it: it sends at most one. When
   * payd had already sent it with that key (the answer was lost): IdempotencyError
   * (sameRequest true, resourceId: the test event, which events.get reads).
   */
  test(id: string, opts: IdempotentOptions = {}): Promise<WebhookEndpointTest> {
    return this.c.idempotent<WebhookEndpointTest>({ method: 'POST', path: `/v2/webhook-endpoints/${enc(id)}/test` }, opts.idempotencyKey,
      undefined, (a) => a.body as WebhookEndpointTest);
  }
}

/** @deprecated Your default webhook endpoint and the entity's signing secret: use webhookEndpoints. */
class WebhookEndpointApi {
  constructor(private readonly c: Payd) {}
  /** Sets the endpoint (PUT: the same call twice is the same change). `secret` is in the answer once, when this call created it. */
  set(params: SetWebhookEndpointParams): Promise<WebhookEndpoint> {
    return this.c.json({ method: 'PUT', path: '/v2/webhook-endpoint', body: params, retrySafe: true });
  }
  get(): Promise<WebhookEndpoint> {
    return this.c.json({ method: 'GET', path: '/v2/webhook-endpoint', retrySafe: true });
  }
  async delete(): Promise<void> {
    await this.c.call({ method: 'DELETE', path: '/v2/webhook-endpoint', retrySafe: true });
  }
  /**
   * A new signing secret, in this answer only; the previous one keeps signing for
   * previous_secret_valid_seconds (default 24 h). Sent with an idempotency key and retried
   * with it: it rotates at most once. When payd had already rotated with that key (the
   * answer was lost), the secret cannot be shown again: IdempotencyError (sameRequest
   * true); rotate again with a new key.
   */
  rotateSecret(params: RotateWebhookSecretParams = {}, opts: IdempotentOptions = {}): Promise<WebhookSecret> {
    return this.c.idempotent<WebhookSecret>({ method: 'POST', path: '/v2/webhook-endpoint/secret/rotate', body: params }, opts.idempotencyKey,
      undefined, (a) => a.body as WebhookSecret);
  }
}

class Events {
  constructor(private readonly c: Payd) {}
  list(query: EventListParams = {}): Promise<ListPage<WebhookEvent>> {
    return this.c.json({ method: 'GET', path: '/v2/events', query, retrySafe: true });
  }
  get(id: string): Promise<WebhookEvent> {
    return this.c.json({ method: 'GET', path: `/v2/events/${enc(id)}`, retrySafe: true });
  }
  iterate(query: EventListParams = {}): AsyncGenerator<WebhookEvent> {
    return this.c.iterate('/v2/events', query);
  }
  /**
   * Sends an event again (202: its new deliveries, due at once): to the endpoint named by
   * webhook_endpoint_id, or else wherever the event goes now. Sent with an idempotency key
   * and retried with it: it resends at most once. When payd had already resent with that
   * key (the answer was lost): IdempotencyError (resourceId: the first new delivery).
   */
  resend(id: string, params: ResendEventParams = {}, opts: IdempotentOptions = {}): Promise<EventResent> {
    return this.c.idempotent<EventResent>({ method: 'POST', path: `/v2/events/${enc(id)}/resend`, body: params }, opts.idempotencyKey,
      undefined, (a) => a.body as EventResent);
  }
}
