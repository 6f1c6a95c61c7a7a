// Management API: applications (register, list, rotate the secret, revoke tokens, the
// audit, get, delete, update), each reached as authority.ts says (management.routes.ts
// assembles).
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { problemResponses, StringEnum } from '../../platform/http/schemas.ts';
import { type ManagementRouteDeps, security, tags } from './management.common.ts';

export async function managementClientRoutes(root: FastifyInstance, { identity, callers: { need, caller, actor } }: ManagementRouteDeps) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();

  const ClientParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) });
  const Urls = Type.Array(Type.String({ maxLength: 2048 }), { maxItems: 20 });
  app.post('/api/v2/clients', {
    preHandler: need('create:clients'),
    schema: {
      tags, security, summary: 'Register an application (the client secret is shown once)',
      description: 'The application belongs to the caller: update:clients and delete:clients reach it. It never gets Management API scopes this way.',
      body: Type.Object({
        name: Type.String({ minLength: 1, maxLength: 100 }), callback_urls: Type.Array(Type.String({ maxLength: 2048 }), { minItems: 1, maxItems: 20 }),
        allowed_origins: Type.Optional(Urls), first_party: Type.Optional(Type.Boolean()),
        token_endpoint_auth_method: Type.Optional(StringEnum(['client_secret_basic', 'client_secret_post', 'none'])),
        id_token_signed_response_alg: Type.Optional(StringEnum(['HS256', 'RS256'])),
      }, { additionalProperties: false }),
      response: problemResponses(400, 401, 403),
    },
  }, async (request, reply) => reply.code(201).send(await identity.applications.create({ ...request.body, created_by: caller(request).clientId })));

  app.get('/api/v2/clients', {
    preHandler: need('read:clients'),
    schema: {
      tags, security, summary: 'List applications (never their secrets)',
      querystring: Type.Object({ limit: Type.Optional(Type.String({ pattern: '^(200|1[0-9]{2}|[1-9][0-9]?)$', description: 'At most this many, 1 to 200 (default 50)' })) }),
      response: problemResponses(400, 401, 403),
    },
  }, async (request) => identity.applications.list(Number(request.query.limit ?? 50)));

  app.post('/api/v2/clients/:id/rotate-secret', {
    preHandler: need('update:clients'),
    schema: {
      tags, security, summary: "Rotate an application's client secret (the new secret is shown once)",
      description: 'Only the caller itself or an application it registered (403 otherwise, whatever its scopes). ' +
        'The old secret stops authenticating at once; tokens already issued stay valid until they expire. ' +
        'id_tokens issued from now on are signed HS256 with the new secret. A public client has no secret (400).',
      params: ClientParams, response: problemResponses(400, 401, 403, 404),
    },
  }, async (request) => identity.applications.rotateSecret(request.params.id, actor(request)));

  app.post('/api/v2/clients/:id/revoke-tokens', {
    preHandler: need('update:clients'),
    schema: {
      tags, security, summary: "Revoke an application's Management API tokens",
      description: 'The caller itself or an application it registered; any other application with manage:all_clients. ' +
        'Every Management API token issued to this application until now is refused from now on (401 invalid_token); ' +
        'the application gets new ones with its credentials. Recorded in the application\'s audit. Built-in applications: 403.',
      params: ClientParams, response: problemResponses(400, 401, 403, 404),
    },
  }, async (request) => identity.applications.revokeTokens(request.params.id, actor(request)));

  app.get('/api/v2/clients/:id/audit', {
    preHandler: need('read:clients'),
    schema: {
      tags, security, summary: "An application's recorded changes, newest first",
      description: 'Who changed its Allowed Callback URLs, Allowed Origins, name or first-party flag (from and to), rotated its secret or revoked its tokens, and when: ' +
        'a Management API client (management:<client_id>), the operator, or a console user (their email).',
      params: ClientParams, response: problemResponses(400, 401, 403, 404),
    },
  }, async (request) => identity.applications.audit(request.params.id));

  app.get('/api/v2/clients/:id', {
    preHandler: need('read:clients'),
    schema: { tags, security, summary: 'Get an application', params: ClientParams, response: problemResponses(401, 403, 404) },
  }, async (request) => identity.applications.get(request.params.id));

  app.delete('/api/v2/clients/:id', {
    preHandler: need('delete:clients'),
    schema: {
      tags, security, summary: 'Delete an application',
      description: 'The caller itself or an application it registered; any other application with manage:all_clients. ' +
        'The application is unknown from then on: sign-in, client authentication and its Management API tokens are refused; ' +
        'its unused authorization codes are burnt, its access and refresh tokens revoked, and the consents users gave it removed. ' +
        'Recorded in its audit (which stays readable). Built-in applications (the console): 403.',
      params: ClientParams, response: { 204: Type.Null({ description: 'Deleted' }), ...problemResponses(400, 401, 403, 404) },
    },
  }, async (request, reply) => {
    await identity.applications.delete(request.params.id, actor(request));
    return reply.code(204).send(null);
  });

  app.patch('/api/v2/clients/:id', {
    preHandler: need('update:clients'),
    schema: {
      tags, security, summary: 'Update an application (name, Allowed Callback URLs, Allowed Origins, first party)', params: ClientParams,
      description: 'The caller itself or an application it registered; any other application with manage:all_clients, ' +
        'and then never its first-party flag (403). Built-in applications: 403.',
      body: Type.Object({ name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })), callback_urls: Type.Optional(Urls), allowed_origins: Type.Optional(Urls), first_party: Type.Optional(Type.Boolean()) },
        { additionalProperties: false, minProperties: 1 }),
      response: problemResponses(400, 401, 403, 404),
    },
  }, async (request) => identity.applications.update(request.params.id, request.body, actor(request)));
}
