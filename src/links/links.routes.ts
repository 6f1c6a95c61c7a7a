// HTTP wiring of payment links (merchant API).
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { entityOf } from '../platform/http/auth.ts';
import { IdParams, problemResponses } from '../platform/http/schemas.ts';
import { CreatePaymentLinkBody } from './links.schemas.ts';
import type { CreatePaymentLinkBody as CreateInput } from './links.schemas.ts';
import type { PaymentLinksService } from './links.service.ts';

const auth = { schemes: ['bearer' as const], scope: 'payment-api' };
const tags = ['Payment links'];
const security = [{ bearerAuth: [] }];

export async function paymentLinksRoutes(root: FastifyInstance, { links }: { links: PaymentLinksService }) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();

  app.post('/v2/payment-links', {
    config: { auth },
    schema: {
      tags, security, summary: 'Create a payment link',
      description:
        'The customer pays the link on the page at `links.customer_url`. A link can be paid once: it is PAID as soon as a ' +
        'payment is authorized, stays payable after a refused or failed attempt, and accepts nothing once CANCELLED or ' +
        'EXPIRED. Events `payment_link.paid`, `payment_link.payment_failed` and `payment_link.cancelled` go to `webhook.url` ' +
        '(see docs/webhooks.md). Answered 200, as the spec shows.',
      body: CreatePaymentLinkBody,
      response: { 200: Type.Ref('PaymentLink'), ...problemResponses(400, 401, 403, 413, 415) },
    },
  }, async (request) => links.create(entityOf(request), request.body as CreateInput));

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
