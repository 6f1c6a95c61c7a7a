// Management API: log in as a user (docs/identity.md), the answer a URL that completes
// the login (management.routes.ts assembles).
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { problemResponses, StringEnum } from '../../platform/http/schemas.ts';
import { type ManagementRouteDeps, security, tags, UserParams } from './management.common.ts';

export async function managementLoginAsRoutes(root: FastifyInstance, { management, callers: { need, caller } }: ManagementRouteDeps) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();

  app.get('/api/v2/users/:id/login-as', {
    preHandler: need('login_as:users'),
    schema: {
      tags, security, summary: 'Log in as a user',
      description: 'A console administrator needs update:admins as well, a member of a merchant\'s dashboard update:dashboard_members as well (403). ' +
        'The user\'s event records the caller (`login_as_actor`: application:<client_id>) beside `name` (`login_as_profile_id`). ' +
        'Dynamic configuration (client_id, redirect_uri, response_type) or, without client_id, the global one (PAYD_IDENTITY_LOGIN_AS_*). ' +
        'Either way: a first-party client, one of its Allowed Callback URLs whose origin (and the console origin) its ' +
        'Allowed Origins list, and response type code (exchange the code at /oauth/token) or token (only for clients that allow it). ' +
        'Answers the URL that completes the login; credentials come back in its query string. The access token carries the claim ' +
        '{identity_claims_base}/login-as-name with `name`.',
      params: UserParams,
      querystring: Type.Object({
        client_id: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Dynamic configuration; without it, PAYD_IDENTITY_LOGIN_AS_CLIENT_ID' })),
        redirect_uri: Type.Optional(Type.String({ format: 'uri', maxLength: 2048, description: 'Required with client_id; without both, PAYD_IDENTITY_LOGIN_AS_REDIRECT_URI' })),
        response_type: Type.Optional(StringEnum(['code', 'token'])),
        name: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Who logs in as the user (auditing)' })),
      }),
      response: { 200: Type.Object({ redirect_url: Type.String() }), ...problemResponses(400, 401, 403, 404) },
    },
  }, async (request) => management.loginAs({
    userId: request.params.id, clientId: request.query.client_id, redirectUri: request.query.redirect_uri,
    responseType: request.query.response_type, name: request.query.name ?? 'management-api', by: { caller: caller(request) },
  }));
}
