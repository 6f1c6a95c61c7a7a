// HTTP of the identity provider, assembled: the browser's pages (src/identity/login/:
// /oauth/authorize in authorize.routes.ts, sign-in, sign-up, consent, logout; mfa/, sdk/,
// federation/), and here discovery, the JWKS of RS256 id_tokens, introspection,
// revocation, /userinfo, and operator endpoints to create users and applications. The
// authorization_code grant is served by POST /oauth/token.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { problemResponses, StringEnum, Uuid } from '../../platform/http/schemas.ts';
import { type IdentityService, PROMPT_VALUES } from './idp.service.ts';
import { MANAGEMENT_SCOPES } from './management.ts';
import { loginPages } from '../login/pages.ts';
import { loginRoutes } from '../login/login.routes.ts';
import { logoutRoutes } from '../login/logout.routes.ts';
import { webMessageRoutes } from '../sdk/web-message.ts';
import { sdkRoutes } from '../sdk/sdk.routes.ts';
import type { Mailer } from '../sdk/mail.ts';
import type { Db } from '../../platform/db/index.ts';
import { consentRoutes } from '../login/consent.routes.ts';
import { Federation } from '../federation/federation.ts';
import { federationRoutes } from '../federation/federation.routes.ts';
import { authorizeRoutes } from '../login/authorize.routes.ts';
import { SignUps } from './signup.ts';
import { enablePasswordGrant } from '../oauth/grants/password.ts';
import { problems } from '../../platform/http/problem.ts';
import { Mfa } from '../mfa/mfa.ts';
import { mfaRoutes } from '../mfa/mfa.routes.ts';
import { Passkeys } from '../mfa/passkeys.ts';
import { type Clock, systemClock } from '../../platform/clock.ts';
import { grantTypesOf } from '../applications/applications.ts';

export interface IdpRouteDeps {
  db: Db;
  identity: IdentityService;
  baseUrl: string;
  csrfKey: Buffer;
  mailer: Mailer;
  masterKey: Buffer;
  allowHttpLocalhost: boolean;
  /** PAYD_CONSOLE_REQUIRE_MFA: an administrator cannot remove their last second factor. */
  consoleRequiresSecondFactor: boolean;
  /** The time of TOTP codes and passkey challenges' expiry (tests move it); default the system clock. */
  clock?: Clock;
}

export async function identityRoutes(root: FastifyInstance, { db, identity, baseUrl, csrfKey, mailer, masterKey, allowHttpLocalhost, consoleRequiresSecondFactor, clock = systemClock }: IdpRouteDeps) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const pages = loginPages(baseUrl, csrfKey);
  const mfa = new Mfa(db, masterKey, new URL(baseUrl).host, clock);
  const passkeys = new Passkeys(db, baseUrl, new URL(baseUrl).host, clock);
  const secondStep = await mfaRoutes(root, { identity, pages, mfa, passkeys, complete: () => complete, consoleRequiresSecondFactor });
  const complete = await consentRoutes(root, { identity, pages, secondStep });
  const signups = new SignUps(db, identity, mailer, baseUrl);
  await loginRoutes(root, { identity, pages, complete, signups, baseUrl, secondStep });
  await logoutRoutes(root, { identity, pages });
  await sdkRoutes(root, { db, identity, pages, mailer, baseUrl, signups });
  await webMessageRoutes(root);
  const federation = new Federation(db, masterKey, `${baseUrl}/oauth/federation/callback`, identity);
  await federationRoutes(root, { identity, pages, complete, secondStep, federation, allowHttpLocalhost });

  await authorizeRoutes(root, { identity, pages, mfa, secondStep, complete, federation });

  app.get('/.well-known/openid-configuration', { schema: { tags: ['Identity'], summary: 'OpenID Provider metadata', response: problemResponses() } }, async () => ({
    issuer: baseUrl,
    authorization_endpoint: `${baseUrl}/oauth/authorize`,
    token_endpoint: `${baseUrl}/oauth/token`,
    userinfo_endpoint: `${baseUrl}/userinfo`,
    introspection_endpoint: `${baseUrl}/oauth/introspect`,
    revocation_endpoint: `${baseUrl}/oauth/revoke`,
    end_session_endpoint: `${baseUrl}/oauth/logout`,
    jwks_uri: `${baseUrl}/.well-known/jwks.json`,
    response_types_supported: ['code'],
    response_modes_supported: ['query', 'web_message'],
    grant_types_supported: ['authorization_code', 'refresh_token', 'client_credentials', 'password'],
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: ['HS256', 'RS256'],
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    introspection_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    revocation_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    code_challenge_methods_supported: ['S256'],
    prompt_values_supported: [...PROMPT_VALUES],
    claims_parameter_supported: false,
    request_parameter_supported: false,
    request_uri_parameter_supported: false,
    scopes_supported: ['openid', 'profile', 'email', 'offline_access'],
    claims_supported: ['sub', 'iss', 'aud', 'exp', 'iat', 'auth_time', 'nonce', 'given_name', 'family_name', 'email', 'email_verified'],
    authorization_response_iss_parameter_supported: true,
  }));

  // Keys of the RS256 id_tokens of public clients (confidential ones get HS256 with their secret).
  app.get('/.well-known/jwks.json', { schema: { tags: ['Identity'], summary: 'Public keys of RS256 id_tokens', response: problemResponses() } }, async () => identity.jwks());

  const FORM = 'application/x-www-form-urlencoded';
  const tokenBody = Type.Object({
    token: Type.String({ minLength: 1, maxLength: 4096 }), token_type_hint: Type.Optional(Type.String({ maxLength: 50 })),
    client_id: Type.Optional(Type.String({ maxLength: 100 })), client_secret: Type.Optional(Type.String({ maxLength: 200 })),
  });
  const oauthErrors = { oauthErrors: () => true };
  app.post('/oauth/introspect', {
    config: oauthErrors,
    schema: {
      tags: ['Identity'], summary: 'Token introspection (RFC 7662)', consumes: [FORM],
      description: 'Client authentication as at the token endpoint. A client learns only about tokens issued to it; any other token is {"active": false}.',
      body: tokenBody, response: problemResponses(400, 401),
    },
  }, async (request, reply) => {
    reply.header('cache-control', 'no-store');
    return identity.introspect(request.headers, request.body);
  });
  app.post('/oauth/revoke', {
    config: oauthErrors,
    schema: {
      tags: ['Identity'], summary: 'Token revocation (RFC 7009)', consumes: [FORM, 'application/json'],
      description: 'Revokes an access token issued to the calling client. Answers 200 whatever the token, as RFC 7009 says.',
      body: tokenBody, response: problemResponses(400, 401),
    },
  }, async (request, reply) => {
    await identity.revoke(request.headers, request.body);
    // RFC 7009 allows any body; {} as JSON, because the identity SDK reads the answer with response.json().
    return reply.code(200).header('cache-control', 'no-store').send({});
  });

  const userinfo = async (request: { headers: { authorization?: string | undefined } }) => {
    const auth = request.headers.authorization;
    return identity.userinfo(auth?.startsWith('Bearer ') ? auth.slice(7) : undefined);
  };
  app.get('/userinfo', { config: oauthErrors, schema: { tags: ['Identity'], summary: 'Claims of the signed-in user', response: problemResponses(401) } }, userinfo);
  // OpenID Connect Core 5.3.1: the UserInfo endpoint takes POST too (the token still in the Authorization header).
  app.post('/userinfo', { config: oauthErrors, schema: { hide: true } }, userinfo);

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
  }, async (request, reply) => {
    const { grant_types: grantTypes, ...input } = request.body;
    const password = grantTypes?.includes('password') ?? false;
    if (password && (input.token_endpoint_auth_method === 'none' || input.first_party === false)) {
      throw problems.invalidField('grant_types', 'password is only for first-party confidential applications (RFC 9700: never for public clients)');
    }
    const created = await identity.applications.create(input);
    if (password) await enablePasswordGrant(db, created.client_id);
    return reply.code(201).send({ ...created, grant_types: grantTypesOf(password) });
  });

  app.get('/admin/v1/identity/users/:id/events', {
    config: admin,
    schema: { tags: ['Operator'], summary: "A user's recent activity (logins)", security: [{ operatorToken: [] }], params: Type.Object({ id: Uuid() }), response: problemResponses(400, 401) },
  }, async (request) => identity.events(request.params.id));
}
