// HTTP wiring of saved cards (docs/decisions.md "Saved cards"): a customer's list, one
// card, and its deletion. Saved cards are created by payments (save_token), never here.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { entityOf } from '../platform/http/auth.ts';
import { type IdempotencyKeys, idempotencyHeaders, markCreated } from '../platform/http/idempotency.ts';
import { IdParams, NoBody, problemResponses } from '../platform/http/schemas.ts';
import { SAVED_CARDS_LIST_LIMIT, type SavedCardsService } from './saved-cards.service.ts';

const auth = { schemes: ['bearer' as const, 'apiKey' as const], scope: 'payment-api' };
const tags = ['Saved cards'];
const security: Array<Record<string, string[]>> = [{ bearerAuth: [] }, { apiKey: [] }];

const ListQuery = Type.Object({
  customer_reference: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'The customer.reference of the payments that saved the cards' })),
  customer_email: Type.Optional(Type.String({ minLength: 1, maxLength: 320, description: 'The customer.email of the payments that saved the cards (compared in lower case)' })),
}, { additionalProperties: false });

export async function savedCardsRoutes(root: FastifyInstance, { savedCards, idempotency }: { savedCards: SavedCardsService; idempotency: IdempotencyKeys }) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const deletionKeys = idempotency.route({ scope: () => 'saved-card-deletions', pathInFingerprint: true });

  app.get('/v2/saved-cards', {
    config: { auth },
    schema: {
      tags, security, summary: "List a customer's saved cards",
      description: `The customer's saved cards that are not deleted, newest first (at most ${SAVED_CARDS_LIST_LIMIT}). ` +
        'Name the customer by exactly one of customer_reference and customer_email. Expired cards are listed (a payment with one is refused).',
      querystring: ListQuery,
      response: { 200: Type.Object({ data: Type.Array(Type.Ref('SavedCard')) }), ...problemResponses(400, 401, 403) },
    },
  }, async (request) => ({ data: await savedCards.list(entityOf(request), request.query) }));

  app.get('/v2/saved-cards/:id', {
    config: { auth },
    schema: {
      tags, security, summary: 'Get a saved card',
      params: IdParams,
      response: { 200: Type.Ref('SavedCard'), 404: NoBody('No such saved card for this entity, or it was deleted (no body)'), ...problemResponses(400, 401, 403) },
    },
  }, async (request) => savedCards.get(entityOf(request), request.params.id));

  app.delete('/v2/saved-cards/:id', {
    config: { auth, ...deletionKeys.config },
    preHandler: deletionKeys.preHandler,
    onSend: deletionKeys.onSend,
    schema: {
      tags, security, summary: 'Delete a saved card',
      description: 'The card can no longer pay (a payment naming it is a 404) and its partner is asked to forget it. Answers the card as it was.',
      headers: idempotencyHeaders('One key per deletion (1-255 visible ASCII characters, no space), scoped to the entity, as for the creating requests. ' +
        'A key already processed is answered 409 write-conflict with resource_id (the saved card the first call deleted) and same_request.'),
      params: IdParams,
      response: { 200: Type.Ref('SavedCard'), 404: NoBody('No such saved card for this entity, or it was deleted already (no body)'), ...problemResponses(400, 401, 403, 409) },
    },
  }, async (request) => {
    const card = await savedCards.delete(entityOf(request), request.params.id);
    markCreated(request, card.id);
    return card;
  });
}
