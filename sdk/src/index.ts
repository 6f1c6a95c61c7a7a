// @payd/sdk: the typed client of payd's Payment API, and webhook verification.
export { Payd, type PaydOptions, type ListPage, type OperationResult, type IdempotentOptions } from './client.ts';
export {
  PaydError, InvalidRequestError, AmountNotAvailableError, AuthenticationError, PermissionError, NotFoundError,
  IdempotencyError, RateLimitError, ServiceUnavailableError, APIError, ConnectionError,
} from './errors.ts';
export { constructEvent, signPayload, WebhookSignatureError, type VerifyOptions } from './webhooks.ts';
export type * from './types.ts';
export type { components, operations, paths } from './openapi.d.ts';
