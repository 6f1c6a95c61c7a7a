// The last touches of the OpenAPI document, the ones that read the whole document rather
// than one route: operation ids, named request bodies, the response headers payd sends
// on every response, security stated on every operation, and the webhooks section.
// The result is what code generators (openapi-typescript, openapi-generator) need to
// produce a client without hand work; the committed openapi.json is this document.
import { EVENT_TYPES } from '../webhooks/catalogue.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * Operation ids, by "METHOD path". They are the SDK's method names: renaming one is a
 * breaking change of every generated client. A route missing here gets an id derived
 * from its method and path (the test of the document lists those).
 */
export const OPERATION_IDS: Record<string, string> = {
  'POST /oauth/token': 'createAccessToken',
  'GET /v2/signing-jwks': 'getSigningJwks',
  'POST /v2/client-sessions': 'createClientSession',
  'GET /v2/client-sessions': 'listClientSessions',
  'GET /v2/client-sessions/{id}': 'getClientSession',
  'POST /v2/client-sessions/{id}/abort': 'abortClientSession',
  'POST /v2/eligible-solutions': 'getEligibleSolutions',
  'POST /v2/payments': 'createPayment',
  'GET /v2/payments': 'listPayments',
  'GET /v2/payments/{id}': 'getPayment',
  'POST /v2/payments/{id}/captures': 'capturePayment',
  'POST /v2/payments/{id}/refunds': 'refundPayment',
  'POST /v2/payments/{id}/voids': 'voidPayment',
  'GET /v2/payments/{id}/operations/{operation_id}': 'getPaymentOperation',
  'GET /v2/saved-cards': 'listSavedCards',
  'GET /v2/saved-cards/{id}': 'getSavedCard',
  'DELETE /v2/saved-cards/{id}': 'deleteSavedCard',
  'POST /v2/payment-links': 'createPaymentLink',
  'GET /v2/payment-links': 'listPaymentLinks',
  'GET /v2/payment-links/{id}': 'getPaymentLink',
  'POST /v2/payment-links/{id}/cancel': 'cancelPaymentLink',
  'GET /v2/events': 'listEvents',
  'GET /v2/events/{id}': 'getEvent',
  'PUT /v2/webhook-endpoint': 'setWebhookEndpoint',
  'GET /v2/webhook-endpoint': 'getWebhookEndpoint',
  'DELETE /v2/webhook-endpoint': 'deleteWebhookEndpoint',
  'POST /v2/webhook-endpoint/secret/rotate': 'rotateWebhookSecret',
  'POST /v2/webhook-endpoints': 'createWebhookEndpoint',
  'GET /v2/webhook-endpoints': 'listWebhookEndpoints',
  'GET /v2/webhook-endpoints/{id}': 'getWebhookEndpointById',
  'PATCH /v2/webhook-endpoints/{id}': 'updateWebhookEndpoint',
  'DELETE /v2/webhook-endpoints/{id}': 'deleteWebhookEndpointById',
  'POST /v2/webhook-endpoints/{id}/secret/rotate': 'rotateWebhookEndpointSecret',
  'POST /v2/webhook-endpoints/{id}/test': 'testWebhookEndpoint',
  'POST /v2/events/{id}/resend': 'resendEvent',
  'POST /partners/{partner}/webhooks': 'receivePartnerNotification',
  'GET /checkout/v1/session': 'checkoutGetSession',
  'POST /checkout/v1/session/payments': 'checkoutPay',
  'POST /admin/v1/entities': 'adminCreateEntity',
  'GET /admin/v1/entities': 'adminListEntities',
  'GET /admin/v1/entities/{id}': 'adminGetEntity',
  'PATCH /admin/v1/entities/{id}': 'adminUpdateEntity',
  'POST /admin/v1/entities/{id}/api-keys': 'adminCreateApiKey',
  'GET /admin/v1/entities/{id}/api-keys': 'adminListApiKeys',
  'DELETE /admin/v1/entities/{id}/api-keys/{key_id}': 'adminRevokeApiKey',
  'POST /admin/v1/identity/providers': 'adminCreateUpstreamProvider',
  'GET /admin/v1/identity/providers': 'adminListUpstreamProviders',
  'POST /admin/v1/entities/{id}/members': 'adminInviteDashboardMember',
  'GET /admin/v1/entities/{id}/members': 'adminListDashboardMembers',
  'PATCH /admin/v1/entities/{id}/members/{user_id}': 'adminUpdateDashboardMember',
  'DELETE /admin/v1/entities/{id}/members/{user_id}': 'adminRemoveDashboardMember',
  'POST /admin/v1/signing-keys/rotate': 'adminRotateSigningKey',
  'GET /admin/v1/entities/{id}/eligibility-rules': 'adminGetEligibilityRules',
  'PUT /admin/v1/entities/{id}/eligibility-rules': 'adminReplaceEligibilityRules',
  'PUT /admin/v1/entities/{id}/webhook-endpoint': 'adminSetWebhookEndpoint',
  'GET /admin/v1/entities/{id}/webhook-endpoint': 'adminGetWebhookEndpoint',
  'DELETE /admin/v1/entities/{id}/webhook-endpoint': 'adminDeleteWebhookEndpoint',
  'GET /admin/v1/entities/{id}/webhook-secret': 'adminGetWebhookSecret',
  'POST /admin/v1/entities/{id}/webhook-secret/rotate': 'adminRotateWebhookSecret',
  'GET /admin/v1/entities/{id}/webhook-events': 'adminListWebhookEvents',
  'GET /admin/v1/entities/{id}/webhook-events/{event_id}': 'adminGetWebhookEvent',
  'POST /admin/v1/entities/{id}/webhook-events/{event_id}/replay': 'adminReplayWebhookEvent',
  'GET /oauth/logout': 'identityLogout',
  'GET /.well-known/openid-configuration': 'identityDiscovery',
  'GET /.well-known/jwks.json': 'identityJwks',
  'POST /oauth/introspect': 'identityIntrospectToken',
  'POST /oauth/revoke': 'identityRevokeToken',
  'GET /userinfo': 'identityUserInfo',
  'POST /admin/v1/identity/users': 'adminCreateIdentityUser',
  'POST /admin/v1/identity/applications': 'adminCreateIdentityApplication',
  'GET /admin/v1/identity/users/{id}/events': 'adminListIdentityUserEvents',
  'GET /api/v2/users': 'managementListUsers',
  'POST /api/v2/users': 'managementCreateUser',
  'GET /api/v2/users/{id}': 'managementGetUser',
  'PATCH /api/v2/users/{id}': 'managementUpdateUser',
  'GET /api/v2/users/{id}/events': 'managementListUserEvents',
  'GET /api/v2/users/{id}/login-as': 'managementLoginAs',
  'POST /api/v2/clients': 'managementCreateClient',
  'GET /api/v2/clients': 'managementListClients',
  'GET /api/v2/clients/{id}': 'managementGetClient',
  'PATCH /api/v2/clients/{id}': 'managementUpdateClient',
  'DELETE /api/v2/clients/{id}': 'managementDeleteClient',
  'POST /api/v2/clients/{id}/rotate-secret': 'managementRotateClientSecret',
  'POST /api/v2/clients/{id}/revoke-tokens': 'managementRevokeClientTokens',
  'GET /api/v2/clients/{id}/audit': 'managementGetClientAudit',
};

const pascal = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/** An id for a route missing from OPERATION_IDS: GET /v2/foo/{id}/bar -> getV2FooByIdBar. */
export function derivedOperationId(method: string, path: string): string {
  const words = path.split('/').filter(Boolean).map((seg) => {
    const param = /^\{(.+)\}$/.exec(seg);
    const w = (param ? `by_${param[1]}` : seg).split(/[^A-Za-z0-9]+/).filter(Boolean).map(pascal).join('');
    return w;
  });
  return method.toLowerCase() + words.join('');
}

/** Operations that need no credential (security: [] says so explicitly). */
const PUBLIC_OPERATIONS = new Set(['GET /oauth/logout', 'GET /.well-known/openid-configuration', 'GET /.well-known/jwks.json']);
/** Identity endpoints that authenticate the client (client_secret_basic or _post). */
const CLIENT_AUTH_OPERATIONS = new Set(['POST /oauth/introspect', 'POST /oauth/revoke']);

const HEADERS = {
  RequestId: { description: 'Id of the request in payd logs (an incoming valid x-request-id is kept)', schema: { type: 'string' } },
  RetryAfter: { description: 'Seconds to wait before retrying (with the same idempotency key)', schema: { type: 'integer', minimum: 0 } },
  CreatedOperationId: { description: 'Id of the capture, refund or void the request created (or, on a replay, created first)', schema: { type: 'string', format: 'uuid' } },
  CacheControl: { description: 'no-store: the answer holds a credential', schema: { type: 'string', enum: ['no-store'] } },
  WwwAuthenticate: { description: 'The authentication scheme expected (RFC 9110 11.6.1)', schema: { type: 'string' } },
  RateLimitLimit: { description: 'Requests the rate limit allows in its window (the tightest limit that applies)', schema: { type: 'integer', minimum: 1 } },
  RateLimitRemaining: { description: 'Requests left in the window', schema: { type: 'integer', minimum: 0 } },
  RateLimitReset: { description: 'Seconds until the window ends', schema: { type: 'integer', minimum: 0 } },
};
const ref = (name: keyof typeof HEADERS) => ({ $ref: `#/components/headers/${name}` });

const testCard = (number: string) => ({ type: 'CARD', number, expiry_month: '12', expiry_year: '2030', cvv: '123' });
/** Request examples, with the simulators' test cards (docs/test-cards.md). */
const EXAMPLES: Record<string, Record<string, { summary: string; value: unknown }>> = {
  createPayment: {
    card: {
      summary: 'A card payment, captured later (4242... is authorized)',
      value: { amount: 10000, currency: 'EUR', capture_mode: 'MANUAL', order: { reference: '1001' }, split: [{ partner: 'card-sim', method: 'CARD', amount: 10000, instrument: testCard('4242424242424242') }] },
    },
    declined: {
      summary: 'A card the issuer declines (4000 0000 0000 0002): 200 with authorization.status REFUSED',
      value: { amount: 2500, currency: 'EUR', split: [{ partner: 'card-sim', method: 'CARD', amount: 2500, instrument: testCard('4000000000000002') }] },
    },
    split: {
      summary: 'A gift card plus a card, captured at once',
      value: {
        amount: 8000, currency: 'EUR', capture_mode: 'AUTOMATIC', split: [
          { partner: 'gift-sim', method: 'GIFT_CARD', amount: 3000, instrument: { type: 'GIFT_CARD', number: '6036280000001234' } },
          { partner: 'card-sim', method: 'CARD', amount: 5000, instrument: testCard('5555555555554444') },
        ],
      },
    },
    challenge: {
      summary: '3-D Secure challenge (4000 0000 0000 3220): PENDING with authorization.redirection',
      value: { amount: 4000, currency: 'EUR', split: [{ partner: 'card-sim', method: 'CARD', amount: 4000, instrument: testCard('4000000000003220') }] },
    },
    saveCard: {
      summary: 'Keep the card on file for the customer (allow_future_usage): its authorization shows token_saved and saved_card_id',
      value: { amount: 1500, currency: 'EUR', allow_future_usage: true, customer: { reference: 'customer-42', email: 'ada@example.com' },
        split: [{ partner: 'card-sim', method: 'CARD', amount: 1500, instrument: testCard('4242424242424242') }] },
    },
    savedCardCustomer: {
      summary: 'Pay with a saved card, the cardholder present (customer-initiated, with the CVC)',
      value: { amount: 2500, currency: 'EUR', customer: { reference: 'customer-42' },
        split: [{ partner: 'card-sim', method: 'CARD', amount: 2500, instrument: { type: 'SAVED_CARD', saved_card_id: '0c5a81bb-1f1e-4c1e-9a5e-2b1f2d6e7a10', cvv: '123' } }] },
    },
    savedCardMerchant: {
      summary: 'Pay with a saved card without the cardholder (merchant-initiated: no CVC, no 3-D Secure)',
      value: { amount: 2500, currency: 'EUR', customer: { reference: 'customer-42' },
        split: [{ partner: 'card-sim', method: 'CARD', amount: 2500, instrument: { type: 'SAVED_CARD', saved_card_id: '0c5a81bb-1f1e-4c1e-9a5e-2b1f2d6e7a10', initiator: 'MERCHANT' } }] },
    },
  },
  capturePayment: { partial: { summary: 'Capture 60.00 for the first shipment', value: { amount: 6000, merchant_reference: 'shipment-1' } } },
  refundPayment: { partial: { summary: 'Refund 20.00 (no body: all that is refundable)', value: { amount: 2000, reason: 'Returned item' } } },
  voidPayment: { all: { summary: 'Release what is not captured (no amount: all of it)', value: {} } },
  createClientSession: {
    embedded: {
      summary: 'A session for the embedded widget',
      value: { amount: 10000, currency: 'EUR', capture_mode: 'MANUAL', integration_mode: 'EMBEDDED', order: { reference: '1001' }, shopper_redirection_url: 'https://shop.example/return' },
    },
  },
  createPaymentLink: {
    link: {
      summary: 'A link sent by e-mail (expires_at: 7 days by default, 90 at most)',
      value: {
        amount: 4500, currency: 'EUR', shopper_redirection_url: 'https://shop.example/thanks',
        customer: { email: 'ada@example.com' }, webhook: { url: 'https://shop.example/payd-webhooks', headers: [{ name: 'x-shop-token', values: ['s3cret'] }] },
      },
    },
  },
  createAccessToken: { clientCredentials: { summary: 'A token for the Payment API (the API key goes in x-api-key)', value: { grant_type: 'client_credentials', scope: 'payment-api' } } },
  identityIntrospectToken: { accessToken: { summary: "Is this access token active? (the application's credentials in Authorization: Basic)", value: { token: 'eyJhbGciOiJSUzI1NiJ9.e30.c2ln', token_type_hint: 'access_token' } } },
  identityRevokeToken: { refreshToken: { summary: 'Revoke a refresh token (and the tokens issued from it)', value: { token: 'rt_0123456789abcdef', token_type_hint: 'refresh_token' } } },
  adminCreateUpstreamProvider: {
    oidc: { summary: 'Sign-in with an upstream OpenID Connect provider', value: { id: 'corp-sso', name: 'Corporate SSO', issuer: 'https://sso.example.com', client_id: 'payd', client_secret: 'upstream-secret', scopes: 'openid email profile' } },
  },
  adminCreateIdentityUser: { user: { summary: 'A user who signs in with e-mail and password', value: { email: 'ada@example.com', password: 'correct horse battery staple', given_name: 'Ada', family_name: 'Lovelace', email_verified: true } } },
  adminCreateIdentityApplication: {
    webApp: { summary: 'A web application (authorization code flow, confidential)', value: { name: 'Shop back office', callback_urls: ['https://shop.example/callback'], allowed_origins: ['https://shop.example'], token_endpoint_auth_method: 'client_secret_basic', response_types: ['code'] } },
  },
  managementCreateUser: { user: { summary: 'A user who signs in with e-mail and password', value: { email: 'ada@example.com', password: 'correct horse battery staple', given_name: 'Ada' } } },
  managementUpdateUser: { block: { summary: 'Block a user (no more sign-ins)', value: { blocked: true } } },
  managementCreateClient: { spa: { summary: 'A single-page application (public client)', value: { name: 'Shop front', callback_urls: ['https://shop.example/callback'], allowed_origins: ['https://shop.example'], token_endpoint_auth_method: 'none' } } },
  managementUpdateClient: { rename: { summary: 'Rename an application', value: { name: 'Shop front (new)' } } },
  adminCreateEntity: { entity: { summary: 'A new merchant entity', value: { name: 'Ada Shop' } } },
  adminUpdateEntity: { rename: { summary: "Rename the entity (its display name on the checkout)", value: { name: 'Ada Shop Ltd' } } },
  adminRotateSigningKey: { redirection: { summary: 'A new key for service-redirection-data tokens', value: { purpose: 'redirection' } } },
  abortClientSession: { abort: { summary: 'The shopper left: the session can no longer be paid', value: { status: 'ABORTED_BY_MERCHANT' } } },
  checkoutPay: {
    card: { summary: 'The widget pays the session with a card', value: { split: [{ partner: 'card-sim', method: 'CARD', amount: 10000, instrument: testCard('4242424242424242') }] } },
  },
  adminSetWebhookEndpoint: { endpoint: { summary: "The entity's endpoint, with a header sent on every call", value: { url: 'https://shop.example/payd-webhooks', headers: [{ name: 'x-shop-token', values: ['s3cret'] }] } } },
  adminRotateWebhookSecret: { overlap: { summary: 'A new secret; the previous one still signs for an hour', value: { previous_secret_valid_seconds: 3600 } } },
  setWebhookEndpoint: { endpoint: { summary: 'Your endpoint, with a header sent on every call', value: { url: 'https://shop.example/payd-webhooks', headers: [{ name: 'x-shop-token', values: ['s3cret'] }] } } },
  rotateWebhookSecret: { overlap: { summary: 'A new secret; the previous one still signs for an hour', value: { previous_secret_valid_seconds: 3600 } } },
  createWebhookEndpoint: { fulfilment: { summary: 'An endpoint for captures and refunds only', value: { url: 'https://shop.example/payd-hooks', enabled_events: ['payment.captured', 'payment.refunded'], description: 'Order fulfilment' } } },
  updateWebhookEndpoint: { pause: { summary: 'Stop sending events to it for now', value: { status: 'disabled' } } },
  resendEvent: {
    all: { summary: 'Again wherever the event goes now', value: {} },
    one: { summary: 'To one endpoint only', value: { webhook_endpoint_id: '0c5a81bb-2f4e-4d6a-9b1c-3e8f7a2d5c40' } },
  },
  rotateWebhookEndpointSecret: { overlap: { summary: 'A new secret; the previous one still signs for an hour', value: { previous_secret_valid_seconds: 3600 } } },
  adminInviteDashboardMember: { operator: { summary: 'Invite someone to the dashboard as an operator', value: { email: 'grace@example.com', role: 'operator' } } },
  adminUpdateDashboardMember: { viewer: { summary: 'Read-only access from now on', value: { role: 'viewer' } } },
};

/**
 * Operations under a request-rate limit (src/platform/http/rate-limit.ts): the token
 * endpoint, and every operation a merchant's credential (bearer token or API key) calls.
 */
export function rateLimited(key: string, op: Json): boolean {
  return key === 'POST /oauth/token' || (Array.isArray(op.security) && op.security.some((s: Json) => 'bearerAuth' in s || 'apiKey' in s));
}

const OPERATION_POSTS = /^POST \/v2\/payments\/\{id\}\/(captures|refunds|voids)$/;

export function finishDocument(doc: Json): Json {
  doc.info = { ...doc.info, license: { name: 'Apache-2.0', identifier: 'Apache-2.0' } };
  doc.components ??= {};
  doc.components.schemas ??= {};
  doc.components.headers = { ...(doc.components.headers ?? {}), ...HEADERS };
  doc.components.securitySchemes = {
    ...doc.components.securitySchemes,
    identityClient: { type: 'http', scheme: 'basic', description: 'An identity application: client_id and client_secret (client_secret_basic; client_secret_post also accepted)' },
    identityAccessToken: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'An access token issued by the identity provider to a signed-in user' },
  };
  const seen = new Map<string, string>();
  for (const [path, item] of Object.entries<Json>(doc.paths ?? {})) {
    for (const [method, op] of Object.entries<Json>(item)) {
      if (typeof op !== 'object' || !op.responses) continue;
      const key = `${method.toUpperCase()} ${path}`;
      op.operationId ??= OPERATION_IDS[key] ?? derivedOperationId(method, path);
      const clash = seen.get(op.operationId);
      if (clash) throw new Error(`operationId ${op.operationId} is used by ${clash} and ${key}`);
      seen.set(op.operationId, key);

      const examples = EXAMPLES[op.operationId];
      // The same examples for each media type of the body (JSON, or a form: the same fields).
      if (examples) for (const media of Object.values<Json>(op.requestBody?.content ?? {})) media.examples = examples;
      // Request bodies become named schemas: <OperationId>Request.
      for (const media of Object.values<Json>(op.requestBody?.content ?? {})) {
        if (!media.schema || media.schema.$ref) continue;
        const name = `${pascal(op.operationId)}Request`;
        doc.components.schemas[name] = media.schema;
        media.schema = { $ref: `#/components/schemas/${name}` };
      }

      if (!op.security) {
        if (PUBLIC_OPERATIONS.has(key)) op.security = [];
        else if (CLIENT_AUTH_OPERATIONS.has(key)) op.security = [{ identityClient: [] }];
        else if (key === 'GET /userinfo') op.security = [{ identityAccessToken: [] }];
      }

      if (rateLimited(key, op) && !op.responses['429']) {
        op.responses['429'] = {
          description: 'Too many requests: a rate limit of the credential or (token endpoint) the client address is reached; Retry-After says when to retry',
          content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
        };
        op.responses = Object.fromEntries(Object.entries<Json>(op.responses).sort(([a], [b]) => a.localeCompare(b)));
      }
      const codes = Object.keys(op.responses);
      if (!codes.some((c) => /^[23]/.test(c))) op.responses['200'] = { description: 'OK' };
      for (const [code, response] of Object.entries<Json>(op.responses)) {
        response.headers = { 'x-request-id': ref('RequestId'), ...(response.headers ?? {}) };
        if (code === '503' || code === '429') response.headers['retry-after'] = ref('RetryAfter');
        if (code === '401') response.headers['www-authenticate'] = ref('WwwAuthenticate');
        if (rateLimited(key, op) && (code === '429' || /^2/.test(code))) {
          response.headers['ratelimit-limit'] = ref('RateLimitLimit');
          response.headers['ratelimit-remaining'] = ref('RateLimitRemaining');
          response.headers['ratelimit-reset'] = ref('RateLimitReset');
        }
        if (code === '200' && OPERATION_POSTS.test(key)) response.headers['x-created-operation-id'] = ref('CreatedOperationId');
        if (code === '200' && key === 'POST /oauth/token') response.headers['cache-control'] = ref('CacheControl');
      }
    }
  }

  doc.components.schemas.PaymentLinkEventData = {
    description: 'data of a payment_link.* event: the link as the API shows it (header values redacted), plus, on payment_link.payment_failed, the attempt',
    allOf: [
      { $ref: '#/components/schemas/PaymentLink' },
      {
        type: 'object',
        properties: {
          payment_id: { type: 'string', format: 'uuid', description: 'payment_link.payment_failed: the payment attempt' },
          authorization_status: { type: 'string', enum: ['REFUSED', 'ERROR'], description: 'payment_link.payment_failed: how the attempt ended' },
        },
      },
    ],
  };
  const event = doc.components.schemas.Event;
  if (event?.properties) {
    event.required = ['id', 'type', 'created_at', 'entity_id', 'data'];
    event.properties.type = { type: 'string', enum: EVENT_TYPES.map((e) => e.type) };
    event.properties.data = { oneOf: [{ $ref: '#/components/schemas/PaymentEventData' }, { $ref: '#/components/schemas/PaymentLinkEventData' }, { $ref: '#/components/schemas/WebhookEndpointTestEventData' }] };
  }
  doc.components.schemas.WebhookEndpointTestEventData = {
    type: 'object',
    description: 'The data of a webhook_endpoint.test event',
    required: ['endpoint_id', 'url', 'message'],
    properties: {
      endpoint_id: { type: 'string', format: 'uuid', description: 'The endpoint tested' },
      url: { type: 'string', description: 'Its URL when the test was asked' },
      message: { type: 'string' },
    },
  };
  const signature = {
    'payd-signature': { required: true, description: 't=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")> (docs/webhooks.md)', schema: { type: 'string' } },
    'payd-event-id': { required: true, schema: { type: 'string', format: 'uuid' } },
    'payd-event-type': { required: true, schema: { type: 'string' } },
    'payd-delivery-id': { required: true, schema: { type: 'string', format: 'uuid' } },
  };
  doc.webhooks = Object.fromEntries(EVENT_TYPES.map((e) => [e.type, {
    post: {
      operationId: `on${e.type.split(/[._]/).map(pascal).join('')}`,
      summary: e.summary,
      description: `Sent to each enabled webhook endpoint of the entity whose enabled_events take it (or, for a payment of a payment link, to the link's webhook), signed with that endpoint's secret. Answer 2xx within the timeout; anything else is retried with backoff.`,
      tags: ['Webhooks'],
      security: [], // payd calls the merchant; the payd-signature header authenticates the call
      parameters: Object.entries(signature).map(([name, h]) => ({ name, in: 'header', ...h })),
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: {
              allOf: [
                { $ref: '#/components/schemas/Event' },
                { type: 'object', properties: { type: { type: 'string', enum: [e.type] }, data: { $ref: `#/components/schemas/${e.data}` } } },
              ],
            },
          },
        },
      },
      responses: { '2XX': { description: 'Received (any 2xx)' } },
    },
  }]));
  return doc;
}
