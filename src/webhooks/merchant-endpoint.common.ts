// What the merchant's webhook endpoint routes share (merchant-endpoint.routes.ts assembles
// them): the payment API's credentials, the OpenAPI tag, the signing sentence, and an
// endpoint as the API shows it.
import type { EndpointRow } from './webhooks.service.ts';

export const auth = { schemes: ['bearer' as const], scope: 'payment-api' };
export const tags = ['Webhooks'];
export const security = [{ bearerAuth: [] }];
export const SIGNING = 'Calls carry payd-signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>; see docs/webhooks.md.';

export const view = <T extends EndpointRow>(e: T) => ({ ...e, object: 'webhook_endpoint' as const });
