// Operator API: merchant entities (create, list, get, rename, checkout origins) and their
// API keys (create, list, revoke) (admin.routes.ts assembles).
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { problemResponses } from '../platform/http/schemas.ts';
import type { EntitiesService } from './entities.service.ts';
import {
  ApiKeyParams,
  CreateEntityBody,
  UpdateEntityBody,
  CreatedApiKey,
  EntityList,
  EntityParams,
  ListQuery,
} from './entities.schemas.ts';
import { auth, security, tags } from './admin.common.ts';

export async function entityRoutes(root: FastifyInstance, { entities, onApiKeyRevoked }: {
  entities: EntitiesService;
  /** Told at once of a revocation so this process refuses the key's tokens immediately. */
  onApiKeyRevoked: (keyId: string) => void;
}) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();

  app.post('/admin/v1/entities', {
    config: { auth },
    schema: {
      tags, security, summary: 'Create a merchant entity',
      body: CreateEntityBody,
      response: { 201: Type.Ref('Entity'), ...problemResponses(400, 401, 413, 415) },
    },
  }, async (request, reply) => reply.code(201).send(await entities.create(request.body.name)));

  app.get('/admin/v1/entities', {
    config: { auth },
    schema: {
      tags, security, summary: 'List merchant entities (oldest first, cursor pagination)',
      querystring: ListQuery,
      response: { 200: EntityList, ...problemResponses(400, 401) },
    },
  }, async (request) => entities.list(Number(request.query.limit ?? 20), request.query.starting_after));

  app.get('/admin/v1/entities/:id', {
    config: { auth },
    schema: {
      tags, security, summary: 'Get a merchant entity',
      params: EntityParams,
      response: { 200: Type.Ref('Entity'), ...problemResponses(400, 401, 404) },
    },
  }, async (request) => entities.get(request.params.id));

  app.patch('/admin/v1/entities/:id', {
    config: { auth },
    schema: {
      tags, security, summary: 'Rename a merchant entity or set its checkout origins',
      description: 'The name is the display name shoppers see on payd\'s pages (hosted page, payment-link page, receipt). checkout_origins restricts which pages may embed the checkout\'s card frame and 3-D Secure frame (docs/checkout.md).',
      params: EntityParams,
      body: UpdateEntityBody,
      response: { 200: Type.Ref('Entity'), ...problemResponses(400, 401, 404, 413, 415) },
    },
  }, async (request) => entities.update(request.params.id, request.body));

  app.post('/admin/v1/entities/:id/api-keys', {
    config: { auth },
    schema: {
      tags, security, summary: 'Create an API key (the key is in this response only)',
      params: EntityParams,
      response: { 201: CreatedApiKey, ...problemResponses(400, 401, 404) },
    },
  }, async (request, reply) => reply.code(201).send(await entities.createApiKey(request.params.id)));

  app.get('/admin/v1/entities/:id/api-keys', {
    config: { auth },
    schema: {
      tags, security, summary: 'List the API keys of an entity (never the secrets)',
      params: EntityParams,
      response: { 200: Type.Object({ data: Type.Array(Type.Ref('ApiKey')) }), ...problemResponses(400, 401, 404) },
    },
  }, async (request) => ({ data: await entities.listApiKeys(request.params.id) }));

  app.delete('/admin/v1/entities/:id/api-keys/:key_id', {
    config: { auth },
    schema: {
      tags, security, summary: 'Revoke an API key',
      description: 'The key stops issuing tokens at once; access tokens it issued stop working within the revocation refresh interval (15 s). Revoking twice is harmless.',
      params: ApiKeyParams,
      response: { 200: Type.Ref('ApiKey'), ...problemResponses(400, 401, 404) },
    },
  }, async (request) => {
    const key = await entities.revokeApiKey(request.params.id, request.params.key_id);
    onApiKeyRevoked(key.id);
    return key;
  });
}
