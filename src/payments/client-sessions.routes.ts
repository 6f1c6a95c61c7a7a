// HTTP wiring of client sessions.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { entityOf } from '../platform/http/auth.ts';
import { IdParams, NoBody, problemResponses } from '../platform/http/schemas.ts';
import { type IdempotencyKeys, idempotencyHeaders, markCreated } from '../platform/http/idempotency.ts';
import { AbortBody, CreateClientSessionBody } from './client-sessions.schemas.ts';
import type { CreateClientSessionBody as CreateInput } from './client-sessions.schemas.ts';
import type { ClientSessionsService } from './client-sessions.service.ts';

const auth = { schemes: ['bearer' as const], scope: 'payment-api' };
const tags = ['Client sessions'];
const security = [{ bearerAuth: [] }];

export async function clientSessionsRoutes(root: FastifyInstance, { sessions, idempotency }: { sessions: ClientSessionsService; idempotency: IdempotencyKeys }) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const keys = idempotency.route({ scope: () => 'client-sessions' });

  app.post('/v2/client-sessions', {
    config: { auth, ...keys.config },
    preHandler: keys.preHandler,
    onSend: keys.onSend,
    schema: {
      tags, security, summary: 'Create a client session',
      headers: idempotencyHeaders('One key per client session (1-255 visible ASCII characters, no space), scoped to the entity. A key already processed is answered 409 write-conflict ' +
        'with resource_id (the client session the first call created) and same_request: true for a retry of the first request, false for another ' +
        'request reusing the key (another body, or one that is not valid or not JSON at all).'),
      body: CreateClientSessionBody,
      response: { 200: Type.Ref('ClientSession'), ...problemResponses(400, 401, 403, 409, 413, 415) },
    },
  }, async (request) => {
    const session = await sessions.create(entityOf(request), request.body as CreateInput);
    markCreated(request, session.id);
    return session;
  });

  app.get('/v2/client-sessions/:id', {
    config: { auth },
    schema: {
      tags, security, summary: 'Get a client session',
      params: IdParams,
      response: { 200: Type.Ref('ClientSession'), 404: NoBody('No such client session for this entity (no body)'), ...problemResponses(400, 401, 403) },
    },
  }, async (request) => sessions.get(entityOf(request), request.params.id));

  app.post('/v2/client-sessions/:id/abort', {
    config: { auth },
    schema: {
      tags, security, summary: 'Abort a client session',
      description: 'Allowed while the session is CREATED, or SUBMITTED with a payment that was refused or failed. Aborting an aborted session returns it unchanged.',
      params: IdParams,
      body: AbortBody,
      response: { 200: Type.Ref('ClientSession'), 404: NoBody('No such client session for this entity (no body)'), ...problemResponses(400, 401, 403) },
    },
  }, async (request) => sessions.abort(entityOf(request), request.params.id));
}
