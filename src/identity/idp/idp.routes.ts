// HTTP of the identity provider: GET /oauth/authorize (the hosted login page when the
// browser has no login session; the form's post, sign-up and logout are in
// src/identity/login/), discovery, the JWKS of RS256 id_tokens, introspection,
// revocation, /userinfo, and operator endpoints to create users and applications. The
// authorization_code grant is served by POST /oauth/token.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { problemResponses, StringEnum, Uuid } from '../../platform/http/schemas.ts';
import { AuthorizeError, type IdentityService, PROMPT_VALUES } from './idp.service.ts';
import { MANAGEMENT_SCOPES } from './management.ts';
import { loginPages } from '../login/pages.ts';
import { loginRoutes } from '../login/login.routes.ts';
import { logoutRoutes } from '../login/logout.routes.ts';
import { webMessageReply, webMessageRoutes } from '../sdk/web-message.ts';
import { sdkRoutes } from '../sdk/sdk.routes.ts';
import type { Mailer } from '../sdk/mail.ts';
import type { Db } from '../../platform/db/index.ts';
import { consentRoutes } from '../login/consent.routes.ts';
import { Federation } from '../federation/federation.ts';
import { federationRoutes } from '../federation/federation.routes.ts';
import { idpRepo } from './idp.repo.ts';
import { SignUps } from './signup.ts';
import { enablePasswordGrant } from '../oauth/grants/password.ts';
import { problems } from '../../platform/http/problem.ts';
import { Mfa } from '../mfa/mfa.ts';
import { mfaRoutes } from '../mfa/mfa.routes.ts';
import { amrOf } from '../mfa/amr.ts';
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

  // OpenID Connect Core 3.1.2.1: GET (query) and POST (form-encoded body), the same request.
  const authorize = async (request: FastifyRequest, reply: FastifyReply, q: Record<string, unknown>) => {
    // response_mode=web_message (the identity SDK's silent authentication): the answer,
    // code or error, is posted to the parent window of the redirect URI's origin, not redirected.
    const webMessage = q.response_mode === 'web_message';
    const refuse = async (err: AuthorizeError) => {
      if (webMessage && err.redirectUri) {
        return webMessageReply(reply, new URL(err.redirectUri).origin, { error: err.error, error_description: err.description, ...(err.state ? { state: err.state } : {}) });
      }
      // No usable redirect_uri (the SDK sends none for a confidential application, which it
      // turns to response_type=token): the error goes to the application's registered
      // origins only, so that checkSession rejects instead of waiting for ever.
      const known = webMessage && typeof q.client_id === 'string' && q.client_id.length <= 100 ? await idpRepo.app(db, q.client_id) : undefined;
      if (known) {
        const origins = [...known.allowed_origins, ...known.callback_urls].flatMap((u) => { try { return [new URL(u).origin]; } catch { return []; } }).filter((o) => o !== 'null');
        const implicit = q.response_type !== undefined && q.response_type !== 'code';
        if (origins.length) {
          return webMessageReply(reply, origins, implicit
            ? { error: 'unsupported_response_type', error_description: 'response_type must be code: payd does not serve tokens in the browser (implicit flow). For checkSession use a public application (PKCE).' }
            : { error: err.error, error_description: err.description });
        }
      }
      return pages.errorPage(reply, err);
    };
    let validated;
    try {
      validated = await identity.validate(q);
      if (q.response_mode !== undefined && q.response_mode !== 'query' && !webMessage) {
        throw new AuthorizeError('invalid_request', 'response_mode may be query or web_message.', validated.request.redirect_uri, validated.request.state || undefined);
      }
    } catch (err) {
      if (err instanceof AuthorizeError) return refuse(err);
      throw err;
    }
    const r = validated.request;
    const answer = (location: string) => (webMessage
      ? webMessageReply(reply, new URL(r.redirect_uri).origin, Object.fromEntries(new URL(location).searchParams))
      : reply.redirect(location, 303));
    // tkn: the one-time token of a password login or sign-up just made through the
    // identity SDK (/identity/v1/password/login, /signup): the sign-in session starts here.
    if (typeof q.tkn === 'string' && q.tkn !== '') {
      const t = await identity.consumeLoginToken(q.tkn, r.client_id);
      if (!t) {
        return refuse(new AuthorizeError('access_denied', 'The authentication token (tkn) is not valid: it expired, was used, or was issued to another application.',
          r.redirect_uri, r.state || undefined, r.response_type === 'messenger_code'));
      }
      // A user with a second factor: the SDK's password login proved the password only.
      if (await mfa.hasFactor(t.user_id)) {
        if (webMessage) return refuse(new AuthorizeError('interaction_required', 'The user has a second factor: sign in on the hosted page.', r.redirect_uri, r.state || undefined));
        return (await secondStep(request, reply, { id: t.user_id }, { v: validated }))!;
      }
      const session = await identity.newSession(t.user_id, amrOf('pwd'));
      pages.setSession(reply, session);
      const user = (await idpRepo.user(db, t.user_id))!;
      if (!webMessage) return complete(request, reply, validated, user, t.auth_time, t.auth_type, session);
      if ((await identity.consentNeeded(validated.app, user.id, r)).length) return refuse(consentRequired(r));
      return answer(await identity.issueCode(r, t.user_id, t.auth_time, { authType: t.auth_type }, session));
    }
    const sessionCookie = pages.session(request);
    const session = await identity.sessionUser(sessionCookie);
    // A session counts unless prompt=login asks for a new sign-in, or it is older than max_age.
    const fresh = session && !r.prompt?.includes('login')
      && (r.max_age === undefined || Date.now() - session.auth_time.getTime() <= r.max_age * 1000);
    // A signed-in browser gets its code, after the consent page when the application is not
    // first-party and lacks a grant (web_message: a hidden frame shows no page, so consent_required).
    if (fresh && !webMessage) return complete(request, reply, validated, session.user, session.auth_time, 'sso', sessionCookie!);
    if (fresh) {
      if ((await identity.consentNeeded(validated.app, session.user.id, r)).length) return refuse(consentRequired(r));
      return answer(await identity.issueCode(r, session.user.id, session.auth_time, { authType: 'sso' }, sessionCookie));
    }
    if (r.prompt?.includes('none') || webMessage) {
      return refuse(new AuthorizeError('login_required', 'The user is not signed in (prompt=none).', r.redirect_uri, r.state || undefined));
    }
    return pages.loginForm(request, reply, r, validated.app.name, undefined, 200, await federation.providers());
  };
  app.get('/oauth/authorize', { schema: { hide: true } }, (request, reply) => authorize(request, reply, (request.query ?? {}) as Record<string, unknown>));
  app.post('/oauth/authorize', { schema: { hide: true } }, (request, reply) => {
    const type = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (type !== 'application/x-www-form-urlencoded' || typeof request.body !== 'object' || request.body === null) {
      return pages.errorPage(reply, new AuthorizeError('invalid_request', 'A POST authorization request must be sent as application/x-www-form-urlencoded.'));
    }
    return authorize(request, reply, request.body as Record<string, unknown>);
  });

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

const consentRequired = (r: { redirect_uri: string; state: string }) =>
  new AuthorizeError('consent_required', 'The user has not allowed this application the requested scopes (prompt=none).', r.redirect_uri, r.state || undefined);
