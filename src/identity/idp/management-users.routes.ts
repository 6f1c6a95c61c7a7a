// Management API: users (list, find by email, create, get, update or block, console
// administration) and a user's events (management.routes.ts assembles).
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { problemResponses } from '../../platform/http/schemas.ts';
import { type ManagementRouteDeps, security, tags, UserParams } from './management.common.ts';

export async function managementUserRoutes(root: FastifyInstance, { management, identity, callers: { need, caller } }: ManagementRouteDeps) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();

  app.get('/api/v2/users', {
    preHandler: need('read:users'),
    schema: {
      tags, security, summary: 'List users (oldest first), or find one by email',
      querystring: Type.Object({
        limit: Type.Optional(Type.String({ pattern: '^(200|1[0-9]{2}|[1-9][0-9]?)$', description: 'At most this many, 1 to 200 (default 50)' })),
        email: Type.Optional(Type.String({ minLength: 1, maxLength: 254, description: 'Exact email, case-insensitive: a list of zero or one user' })),
      }),
      response: problemResponses(400, 401, 403),
    },
  }, async (request) => management.users(request.query.limit ? Number(request.query.limit) : undefined, request.query.email));

  app.post('/api/v2/users', {
    preHandler: need('create:users'),
    schema: {
      tags, security, summary: 'Create a user',
      body: Type.Object({
        email: Type.String({ format: 'email', maxLength: 254 }), password: Type.String({ minLength: 12, maxLength: 256 }),
        given_name: Type.Optional(Type.String({ maxLength: 100 })), family_name: Type.Optional(Type.String({ maxLength: 100 })),
        email_verified: Type.Optional(Type.Boolean()),
      }, { additionalProperties: false }),
      response: problemResponses(400, 401, 403, 409),
    },
  }, async (request, reply) => reply.code(201).send(await identity.createUser(request.body)));

  app.get('/api/v2/users/:id', {
    preHandler: need('read:users'),
    schema: { tags, security, summary: 'Get a user', params: UserParams, response: problemResponses(401, 403, 404) },
  }, async (request) => management.user(request.params.id));

  app.patch('/api/v2/users/:id', {
    preHandler: need('update:users'),
    schema: {
      tags, security, summary: 'Update or block a user, or grant or withdraw console administration', params: UserParams,
      description: '`is_admin` (console administration) needs the scope update:admins as well as update:users. ' +
        'A console administrator is changed only with update:admins as well, a member of a merchant\'s dashboard only with ' +
        'update:dashboard_members as well (403 naming the missing scope). ' +
        'Withdrawing is_admin from the last active administrator, or blocking that administrator, is refused (409).',
      body: Type.Object({
        given_name: Type.Optional(Type.String({ maxLength: 100 })), family_name: Type.Optional(Type.String({ maxLength: 100 })),
        email_verified: Type.Optional(Type.Boolean()), blocked: Type.Optional(Type.Boolean()), password: Type.Optional(Type.String({ minLength: 12, maxLength: 256 })),
        is_admin: Type.Optional(Type.Boolean({ description: 'Console administrator (scope update:admins)' })),
      }, { additionalProperties: false, minProperties: 1 }),
      response: problemResponses(400, 401, 403, 404, 409),
    },
  }, async (request) => management.updateUser(request.params.id, request.body, caller(request)));

  app.get('/api/v2/users/:id/events', {
    preHandler: need('read:user_events'),
    schema: { tags, security, summary: "A user's events (logins, login-as), newest first", params: UserParams, response: problemResponses(401, 403, 404) },
  }, async (request) => management.events(request.params.id));
}
