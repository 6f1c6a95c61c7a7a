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
export type EventListParams = Query<operations['listEvents']>;
export type SavedCardListParams = Query<operations['listSavedCards']>;
export type WebhookEndpoint = Ok<operations['getWebhookEndpoint']>;
export type WebhookSecret = Ok<operations['rotateWebhookSecret']>;
type Body<Op> = Op extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;
export type SetWebhookEndpointParams = Body<operations['setWebhookEndpoint']>;
export type RotateWebhookSecretParams = Partial<Body<operations['rotateWebhookSecret']>>;
