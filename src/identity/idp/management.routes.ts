// The Management API (/api/v2): bearer tokens from client credentials of an application
// granted management scopes; users, their events, and login-as.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { problemResponses, StringEnum, Uuid } from '../../platform/http/schemas.ts';
import type { IdentityService } from './idp.service.ts';
import type { ManagementService } from './management.ts';
import type { Caller } from './authority.ts';

const tags = ['Identity Management API'];
const security = [{ managementToken: [] }];
const UserParams = Type.Object({ id: Uuid() });

export async function managementRoutes(root: FastifyInstance, { management, identity }: { management: ManagementService; identity: IdentityService }) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  // The caller behind the token: what it reaches is decided from it (authority.ts), and it
  // is recorded with what it changes.
  const callers = new WeakMap<object, Caller>();
  const need = (scope: string) => async (request: { headers: { authorization?: string | undefined } }) => {
    callers.set(request, await management.authorize(request.headers.authorization, scope));
  };
  const caller = (request: object): Caller => {
    const c = callers.get(request);
    if (!c) throw new Error('Management API route without its scope check');
    return c;
  };
  const actor = (request: object) => ({ via: 'management' as const, name: `management:${caller(request).clientId}`, caller: caller(request) });

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
