// The API's types, named: generated from payd's openapi.json (openapi.d.ts is written by
// `npm run sdk:types` at the repository root; do not edit it by hand).
import type { components, operations } from './openapi.d.ts';

type Schemas = components['schemas'];

export type Payment = Schemas['Payment'];
export type PaymentOperation = Schemas['PaymentOperation'];
export type PartnerTransaction = Schemas['PartnerTransaction'];
export type ClientSession = Schemas['ClientSession'];
export type PaymentLink = Schemas['PaymentLink'];
export type SavedCard = Schemas['SavedCard'];
export type WebhookEvent = Schemas['Event'];
export type PaymentEventData = Schemas['PaymentEventData'];
export type PaymentLinkEventData = Schemas['PaymentLinkEventData'];
export type Problem = Schemas['Problem'];

export type CreatePaymentParams = Schemas['CreatePaymentRequest'];
export type CaptureParams = Schemas['CapturePaymentRequest'];
export type RefundParams = Schemas['RefundPaymentRequest'];
export type VoidParams = Schemas['VoidPaymentRequest'];
export type CreateClientSessionParams = Schemas['CreateClientSessionRequest'];
export type CreatePaymentLinkParams = Schemas['CreatePaymentLinkRequest'];
export type EligibleSolutionsParams = Schemas['GetEligibleSolutionsRequest'];

type Ok<Op> = Op extends { responses: { 200: { content: { 'application/json': infer B } } } } ? B : never;
type Query<Op> = Op extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;

export type EligibleSolutions = Ok<operations['getEligibleSolutions']>;
export type SigningJwks = Ok<operations['getSigningJwks']>;

/** Query parameters that are numbers (the API declares every query value a string: they are sent in decimal). */
type NumericParam = 'limit' | 'amount_gte' | 'amount_lte';
/** Query parameters that are times (sent as ISO 8601). */
type TimeParam = 'created_gte' | 'created_lt';
/**
 * A list's filters, derived from its operation's query parameters in openapi.json: each
 * as the document declares it, numbers as numbers (limit: 5), times as Dates or ISO
 * strings, and the comma lists (`Values`) also as arrays of their values.
 */
export type ListParams<Op, Values extends Record<string, string> = Record<never, string>> = {
  [K in keyof Query<Op>]?: K extends NumericParam ? number | string
    : K extends TimeParam ? Date | string
    : K extends keyof Values ? Values[K] | readonly Values[K][] | Extract<Query<Op>[K], string>
    : Query<Op>[K];
};
export type PaymentListParams = ListParams<operations['listPayments'], { authorization_status: Payment['authorization']['status'] }>;
export type ClientSessionListParams = ListParams<operations['listClientSessions'], { status: ClientSession['status'] }>;
export type PaymentLinkListParams = ListParams<operations['listPaymentLinks'], { status: PaymentLink['status'] }>;
export type EventListParams = ListParams<operations['listEvents'], { type: WebhookEvent['type'] }>;
export type SavedCardListParams = Query<operations['listSavedCards']>;
export type WebhookEndpoint = Ok<operations['getWebhookEndpoint']>;
export type WebhookSecret = Ok<operations['rotateWebhookSecret']>;
type Body<Op> = Op extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;
export type SetWebhookEndpointParams = Body<operations['setWebhookEndpoint']>;
export type RotateWebhookSecretParams = Partial<Body<operations['rotateWebhookSecret']>>;
/** An endpoint of /v2/webhook-endpoints (header values masked; no secret). */
export type WebhookEndpointItem = Ok<operations['getWebhookEndpointById']>;
/** The answer of webhookEndpoints.create: the endpoint and its secret, shown once. */
export type CreatedWebhookEndpoint = Ok<operations['createWebhookEndpoint']>;
export type CreateWebhookEndpointParams = Body<operations['createWebhookEndpoint']>;
export type UpdateWebhookEndpointParams = Body<operations['updateWebhookEndpoint']>;
export type WebhookEndpointListParams = ListParams<operations['listWebhookEndpoints']>;
export type WebhookEndpointSecret = Ok<operations['rotateWebhookEndpointSecret']>;
export type WebhookEndpointTest = Accepted<operations['testWebhookEndpoint']>;
/** The answer of events.resend: the new deliveries of the event. */
export type EventResent = Accepted<operations['resendEvent']>;
export type ResendEventParams = Body<operations['resendEvent']>;
type Accepted<Op> = Op extends { responses: { 202: { content: { 'application/json': infer B } } } } ? B : never;
