// Inbound partner notifications: POST /partners/{partner}/webhooks. The route is payments'
// (the connector port knows no web framework): the connector verifies the partner's
// signature on the bytes received and says which of payd's calls the notification is about; payd applies each as an answer that came late (a PENDING
// transaction takes it; one already settled is left as it is), so a notification that
// repeats (partners deliver at least once) changes nothing the second time. The route is
// the payments module's: a connector only verifies and parses (partners import no payments).
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { problems } from '../platform/http/problem.ts';
import { problemResponses } from '../platform/http/schemas.ts';
import type { PartnerRegistry } from '../partners/port.ts';
import type { PaymentsService } from './payments.service.ts';

export async function partnerWebhookRoutes(root: FastifyInstance, { partners, payments }: { partners: PartnerRegistry; payments: PaymentsService }) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  // The signature covers the exact bytes: keep the body as text in this scope.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => done(null, body));

  app.post('/partners/:partner/webhooks', {
    schema: {
      tags: ['Partners'],
      summary: 'Receive a notification from a partner (its webhook)',
      description: 'For partners whose connector reads notifications (stripe: Stripe-Signature, the endpoint\'s signing secret in PAYD_PARTNERS; '
        + 'the simulators: Sim-Signature t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.body">, a body {"key": "<partner key>"}, the outcome read from the simulator\'s own ledger). '
        + 'Each notification settles the PENDING call it names at most once; repeats are acknowledged and change nothing. 400 when the signature does not verify.',
      security: [],
      params: Type.Object({ partner: Type.String({ maxLength: 40, description: 'A partner name from PAYD_PARTNERS' }) }),
      response: {
        200: Type.Object({ received: Type.Literal(true), applied: Type.Integer({ minimum: 0, description: 'How many of payd\'s partner transactions the notification named' }) }),
        ...problemResponses(400, 404),
      },
    },
  }, async (request) => {
    const connector = partners.get(request.params.partner);
    if (!connector?.notification) throw problems.notFound('No partner of that name takes notifications here.');
    const raw = typeof request.body === 'string' ? request.body : '';
    const notes = await connector.notification(raw, request.headers);
    if (notes === 'UNVERIFIED') throw problems.invalidRequest('The notification\'s signature does not verify.');
    let applied = 0;
    for (const n of notes) applied += await payments.notified(connector.name, n);
    return { received: true as const, applied };
  });
}
