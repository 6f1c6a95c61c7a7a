// The operator's identity endpoints (PAYD_ADMIN_TOKEN): create a user, register an
// application, read a user's recent activity (idp.routes.ts assembles).
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { problemResponses, StringEnum, Uuid } from '../../platform/http/schemas.ts';
import type { IdentityService } from './idp.service.ts';
import { MANAGEMENT_SCOPES } from './management.ts';

export async function identityOperatorRoutes(root: FastifyInstance, { identity }: { identity: IdentityService }) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();

  const admin = { auth: { schemes: ['admin' as const] } };
  app.post('/admin/v1/identity/users', {
    config: admin,
    schema: {
      tags: ['Operator'], summary: 'Create an identity user', security: [{ operatorToken: [] }],
      body: Type.Object({
        email: Type.String({ format: 'email', maxLength: 254 }), password: Type.String({ minLength: 12, maxLength: 256 }),
        given_name: Type.Optional(Type.String({ maxLength: 100 })), family_name: Type.Optional(Type.String({ maxLength: 100 })),
        email_verified: Type.Optional(Type.Boolean()), is_admin: Type.Optional(Type.Boolean()),
      }, { additionalProperties: false }),
      response: { 201: Type.Object({ id: Uuid(), email: Type.String() }, { additionalProperties: true }), ...problemResponses(400, 401, 409) },
    },
  }, async (request, reply) => reply.code(201).send(await identity.createUser(request.body)));

  app.post('/admin/v1/identity/applications', {
    config: admin,
    schema: {
      tags: ['Operator'], summary: 'Register an application (OAuth client); the client secret is shown once', security: [{ operatorToken: [] }],
      body: Type.Object({
        name: Type.String({ minLength: 1, maxLength: 100 }),
        callback_urls: Type.Array(Type.String({ maxLength: 2048 }), { minItems: 1, maxItems: 20, description: 'Allowed Callback URLs (exact match)' }),
        allowed_origins: Type.Optional(Type.Array(Type.String({ maxLength: 2048 }), { maxItems: 20 })),
        first_party: Type.Optional(Type.Boolean()),
        token_endpoint_auth_method: Type.Optional(StringEnum(['client_secret_basic', 'client_secret_post', 'none'])),
        response_types: Type.Optional(Type.Array(StringEnum(['code', 'messenger_code', 'token']), {
          minItems: 1, uniqueItems: true, description: 'token: login-as only, credentials in the query string',
        })),
        id_token_signed_response_alg: Type.Optional(StringEnum(['HS256', 'RS256'], {
          description: 'HS256 with the client secret (default) or RS256 with the keys at /.well-known/jwks.json (public clients: always RS256)',
        })),
        management_scopes: Type.Optional(Type.Array(StringEnum(MANAGEMENT_SCOPES), {
          uniqueItems: true, description: 'Management API scopes this application may get with client credentials',
        })),
        grant_types: Type.Optional(Type.Array(StringEnum(['authorization_code', 'refresh_token', 'password']), {
          uniqueItems: true, description: 'password: opts a first-party confidential application into the password grant (off by default; never for public clients)',
        })),
      }, { additionalProperties: false }),
      response: { 201: Type.Object({ client_id: Type.String(), client_secret: Type.Optional(Type.String()), grant_types: Type.Optional(Type.Array(Type.String())) }, { additionalProperties: true }), ...problemResponses(400, 401) },
    },
  }, async (request, reply) => reply.code(201).send(await identity.registerApplication(request.body)));

  app.get('/admin/v1/identity/users/:id/events', {
    config: admin,
    schema: { tags: ['Operator'], summary: "A user's recent activity (logins)", security: [{ operatorToken: [] }], params: Type.Object({ id: Uuid() }), response: problemResponses(400, 401) },
  }, async (request) => identity.events(request.params.id));
}
