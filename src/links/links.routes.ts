// HTTP wiring of payment links (merchant API).
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { entityOf } from '../platform/http/auth.ts';
import { IdParams, problemResponses } from '../platform/http/schemas.ts';
import { type IdempotencyKeys, idempotencyHeaders, markCreated } from '../platform/http/idempotency.ts';
import { CreatePaymentLinkBody } from './links.schemas.ts';
import type { CreatePaymentLinkBody as CreateInput } from './links.schemas.ts';
import type { PaymentLinksService } from './links.service.ts';

const auth = { schemes: ['bearer' as const], scope: 'payment-api' };
const tags = ['Payment links'];
const security = [{ bearerAuth: [] }];

export async function paymentLinksRoutes(root: FastifyInstance, { links, idempotency }: { links: PaymentLinksService; idempotency: IdempotencyKeys }) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const keys = idempotency.route({ scope: () => 'payment-links' });

  app.post('/v2/payment-links', {
    config: { auth, ...keys.config },
    preHandler: keys.preHandler,
    onSend: keys.onSend,
    schema: {
      tags, security, summary: 'Create a payment link',
      description:
        'The customer pays the link on the page at `links.customer_url`. A link can be paid once: it is PAID as soon as a ' +
        'payment is authorized, stays payable after a refused or failed attempt, and accepts nothing once CANCELLED or ' +
        'EXPIRED. Events `payment_link.paid`, `payment_link.payment_failed` and `payment_link.cancelled` go to `webhook.url` ' +
        '(see docs/webhooks.md). Answered 200, as the spec shows.',
      headers: idempotencyHeaders('One key per payment link (1-255 visible ASCII characters, no space), scoped to the entity. A key already processed is answered 409 write-conflict ' +
        'with resource_id (the payment link the first call created) and same_request: true for a retry of the first request, false for another ' +
        'request reusing the key (another body, or one that is not valid or not JSON at all).'),
      body: CreatePaymentLinkBody,
      response: { 200: Type.Ref('PaymentLink'), ...problemResponses(400, 401, 403, 409, 413, 415) },
    },
  }, async (request) => {
    const link = await links.create(entityOf(request), request.body as CreateInput);
    markCreated(request, link.id);
    return link;
  });

  app.get('/v2/payment-links/:id', {
    config: { auth },
    schema: {
      tags, security, summary: 'Get a payment link',
      params: IdParams,
      response: { 200: Type.Ref('PaymentLink'), ...problemResponses(400, 401, 403, 404) },
    },
  }, async (request) => links.get(entityOf(request), request.params.id));

  app.post('/v2/payment-links/:id/cancel', {
    config: { auth },
    schema: {
      tags, security, summary: 'Cancel a payment link',
      description: 'A CREATED link becomes CANCELLED and its page accepts no payment. Cancelling a cancelled link returns it ' +
        'unchanged; a PAID or EXPIRED link answers 400; 409 while a payment attempt (3-D Secure) is in progress. No body.',
      params: IdParams,
      response: { 200: Type.Ref('PaymentLink'), ...problemResponses(400, 401, 403, 404, 409) },
    },
  }, async (request) => links.cancel(entityOf(request), request.params.id));
}
