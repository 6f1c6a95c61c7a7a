// HTTP of the identity provider: /oauth/authorize with the hosted login page
// (CSRF-protected, throttled), discovery, /userinfo, and operator endpoints to create
// users and applications. The authorization_code grant is served by POST /oauth/token.
import { createHmac, randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { safeEqual } from '../../platform/crypto/secrets.ts';
import { Problem } from '../../platform/http/problem.ts';
import { problemResponses, Uuid } from '../../platform/http/schemas.ts';
import { escapeHtml, sendPage } from '../../checkout/pages.ts';
import { type AuthRequest, AuthorizeError, type IdentityService } from './idp.service.ts';
import { MANAGEMENT_SCOPES } from './management.ts';

const SESSION_COOKIE = 'payd_idp_session';
const CSRF_COOKIE = 'payd_idp_csrf';
const REQUEST_FIELDS = ['client_id', 'redirect_uri', 'response_type', 'scope', 'state', 'nonce', 'code_challenge', 'code_challenge_method', 'account_linking_token'] as const;

function cookies(request: FastifyRequest): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i > 0) out[part.slice(0, i).trim()] = decodeURIComponent(part.slice(i + 1).trim());
  }
  return out;
}

export interface IdpRouteDeps {
  identity: IdentityService;
  baseUrl: string;
  csrfKey: Buffer;
}

export async function identityRoutes(root: FastifyInstance, { identity, baseUrl, csrfKey }: IdpRouteDeps) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const secure = baseUrl.startsWith('https://') ? '; Secure' : '';
  const csrfFor = (nonce: string) => createHmac('sha256', csrfKey).update(`idp-csrf:${nonce}`).digest('base64url');

  const errorPage = (reply: FastifyReply, err: AuthorizeError) => {
    if (err.redirectUri && err.messenger) {
      const url = new URL(err.redirectUri);
      url.searchParams.append('error', 'access_denied');
      return reply.redirect(url.toString(), 303);
    }
    if (err.redirectUri) {
      const url = new URL(err.redirectUri);
      url.searchParams.set('error', err.error);
      url.searchParams.set('error_description', err.description);
      if (err.state) url.searchParams.set('state', err.state);
      url.searchParams.set('iss', baseUrl);
      return reply.redirect(url.toString(), 303);
    }
    return sendPage(reply, 400, 'Sign-in request refused', `<p role="alert">${escapeHtml(err.description)}</p>`);
  };

  const loginForm = (reply: FastifyReply, r: AuthRequest, appName: string, message?: string, status = 200) => {
    const nonce = randomBytes(16).toString('base64url');
    reply.header('set-cookie', `${CSRF_COOKIE}=${nonce}; HttpOnly; SameSite=Lax; Path=/oauth${secure}`);
    const hidden = REQUEST_FIELDS.map((k) => (r[k] ? `<input type="hidden" name="${k}" value="${escapeHtml(r[k]!)}">` : '')).join('');
    return sendPage(reply, status, `Sign in to ${appName}`, `
<div class="card-box">
${message ? `<p class="payd-error" role="alert">${escapeHtml(message)}</p>` : ''}
<form method="post" action="/oauth/authorize/login" class="payd-form">
<input type="hidden" name="csrf" value="${csrfFor(nonce)}">${hidden}
<div class="payd-field"><label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required autofocus></div>
<div class="payd-field"><label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required></div>
<button type="submit" class="payd-pay">Sign in</button>
<button type="submit" name="cancel" value="1" class="secondary" formnovalidate>Cancel</button>
</form>
<p><a href="/oauth/authorize/signup?${escapeHtml(new URLSearchParams(REQUEST_FIELDS.flatMap((k) => (r[k] ? [[k, r[k]!]] : []))).toString())}">Create an account</a></p>
</div>`, [], undefined, [new URL(r.redirect_uri).origin]);
  };

  const signupForm = (reply: FastifyReply, r: AuthRequest, appName: string, message?: string, status = 200) => {
    const nonce = randomBytes(16).toString('base64url');
    reply.header('set-cookie', `${CSRF_COOKIE}=${nonce}; HttpOnly; SameSite=Lax; Path=/oauth${secure}`);
    const hidden = REQUEST_FIELDS.map((k) => (r[k] ? `<input type="hidden" name="${k}" value="${escapeHtml(r[k]!)}">` : '')).join('');
    return sendPage(reply, status, `Create your ${appName} account`, `
<div class="card-box">
${message ? `<p class="payd-error" role="alert">${escapeHtml(message)}</p>` : ''}
<form method="post" action="/oauth/authorize/signup" class="payd-form">
<input type="hidden" name="csrf" value="${csrfFor(nonce)}">${hidden}
<div class="payd-field"><label for="given_name">First name</label><input id="given_name" name="given_name" autocomplete="given-name" maxlength="100"></div>
<div class="payd-field"><label for="family_name">Last name</label><input id="family_name" name="family_name" autocomplete="family-name" maxlength="100"></div>
<div class="payd-field"><label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required></div>
<div class="payd-field"><label for="password">Password (12 characters or more)</label><input id="password" name="password" type="password" autocomplete="new-password" minlength="12" required></div>
<button type="submit" class="payd-pay">Create account</button>
</form></div>`, [], undefined, [new URL(r.redirect_uri).origin]);
  };

  app.get('/oauth/authorize/signup', { schema: { hide: true } }, async (request, reply) => {
    try {
      const v = await identity.validate(request.query as Record<string, unknown>);
      return signupForm(reply, v.request, v.app.name);
    } catch (err) {
      if (err instanceof AuthorizeError) return errorPage(reply, err);
      throw err;
    }
  });

  app.post('/oauth/authorize/signup', {
    schema: { hide: true, body: Type.Record(Type.String(), Type.String({ maxLength: 2048 })) },
  }, async (request, reply) => {
    const body = request.body as Record<string, string>;
    let v;
    try {
      v = await identity.validate(body);
    } catch (err) {
      if (err instanceof AuthorizeError) return errorPage(reply, err);
      throw err;
    }
    const nonce = cookies(request)[CSRF_COOKIE];
    if (!nonce || !body.csrf || !safeEqual(csrfFor(nonce), body.csrf)) {
      return sendPage(reply, 403, 'Sign-up refused', '<p role="alert">The form expired or did not come from this site. Go back and try again.</p>');
    }
    const email = (body.email ?? '').trim();
    const password = body.password ?? '';
    if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email) || email.length > 254) return signupForm(reply, v.request, v.app.name, 'Enter a valid email address.', 400);
    if (password.length < 12 || password.length > 256) return signupForm(reply, v.request, v.app.name, 'Choose a password of 12 to 256 characters.', 400);
    let user;
    try {
      user = await identity.createUser({ email, password, given_name: body.given_name || undefined, family_name: body.family_name || undefined });
    } catch (err) {
      if (err instanceof Problem && err.status === 409) return signupForm(reply, v.request, v.app.name, 'This account could not be created. If you already have one, sign in instead.', 400);
      throw err;
    }
    const session = await identity.newSession(user.id);
    reply.header('set-cookie', `${SESSION_COOKIE}=${session}; HttpOnly; SameSite=Lax; Path=/oauth${secure}`);
    return reply.redirect(await identity.issueCode(v.request, user.id, new Date()), 303);
  });

  app.get('/oauth/authorize', { schema: { hide: true } }, async (request, reply) => {
    let validated;
    try {
      validated = await identity.validate(request.query as Record<string, unknown>);
    } catch (err) {
      if (err instanceof AuthorizeError) return errorPage(reply, err);
      throw err;
    }
    const session = await identity.sessionUser(cookies(request)[SESSION_COOKIE]);
    if (session) return reply.redirect(await identity.issueCode(validated.request, session.user.id, session.auth_time), 303);
    return loginForm(reply, validated.request, validated.app.name);
  });

  app.post('/oauth/authorize/login', {
    schema: { hide: true, body: Type.Record(Type.String(), Type.String({ maxLength: 2048 })) },
  }, async (request, reply) => {
    const body = request.body as Record<string, string>;
    let validated;
    try {
      validated = await identity.validate(body);
    } catch (err) {
      if (err instanceof AuthorizeError) return errorPage(reply, err);
      throw err;
    }
    const nonce = cookies(request)[CSRF_COOKIE];
    if (!nonce || !body.csrf || !safeEqual(csrfFor(nonce), body.csrf)) {
      return sendPage(reply, 403, 'Sign-in refused', '<p role="alert">The sign-in form expired or did not come from this site. Go back and try again.</p>');
    }
    if (body.cancel) {
      const r = validated.request;
      return errorPage(reply, new AuthorizeError('access_denied', 'The user cancelled the sign-in.', r.redirect_uri, r.state || undefined, r.response_type === 'messenger_code'));
    }
    try {
      const user = await identity.login(body.email ?? '', body.password ?? '', request.ip);
      const session = await identity.newSession(user.id);
      reply.header('set-cookie', `${SESSION_COOKIE}=${session}; HttpOnly; SameSite=Lax; Path=/oauth${secure}`);
      return reply.redirect(await identity.issueCode(validated.request, user.id, new Date()), 303);
    } catch (err) {
      if (err instanceof Problem && (err.status === 401 || err.status === 429)) {
        return loginForm(reply, validated.request, validated.app.name, err.detail, err.status === 429 ? 429 : 200);
      }
      throw err;
    }
  });

  app.get('/.well-known/openid-configuration', { schema: { tags: ['Identity'], summary: 'OpenID Provider metadata' } }, async () => ({
    issuer: baseUrl,
    authorization_endpoint: `${baseUrl}/oauth/authorize`,
    token_endpoint: `${baseUrl}/oauth/token`,
    userinfo_endpoint: `${baseUrl}/userinfo`,
    introspection_endpoint: `${baseUrl}/oauth/introspect`,
    revocation_endpoint: `${baseUrl}/oauth/revoke`,
    jwks_uri: `${baseUrl}/.well-known/jwks.json`,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'client_credentials'],
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: ['HS256', 'RS256'],
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    code_challenge_methods_supported: ['S256'],
    scopes_supported: ['openid', 'profile', 'email'],
    claims_supported: ['sub', 'iss', 'aud', 'exp', 'iat', 'auth_time', 'nonce', 'given_name', 'family_name', 'email', 'email_verified'],
    authorization_response_iss_parameter_supported: true,
  }));

  // Keys of the RS256 id_tokens of public clients (confidential ones get HS256 with their secret).
  app.get('/.well-known/jwks.json', { schema: { tags: ['Identity'], summary: 'Public keys of RS256 id_tokens' } }, async () => identity.jwks());

  const FORM = 'application/x-www-form-urlencoded';
  const tokenBody = Type.Object({
    token: Type.String({ minLength: 1, maxLength: 4096 }), token_type_hint: Type.Optional(Type.String({ maxLength: 50 })),
    client_id: Type.Optional(Type.String({ maxLength: 100 })), client_secret: Type.Optional(Type.String({ maxLength: 200 })),
  });
  app.post('/oauth/introspect', {
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
    schema: {
      tags: ['Identity'], summary: 'Token revocation (RFC 7009)', consumes: [FORM],
      description: 'Revokes an access token issued to the calling client. Answers 200 whatever the token, as RFC 7009 says.',
      body: tokenBody, response: problemResponses(400, 401),
    },
  }, async (request, reply) => {
    await identity.revoke(request.headers, request.body);
    return reply.code(200).send();
  });

  app.get('/userinfo', { schema: { tags: ['Identity'], summary: 'Claims of the signed-in user', response: problemResponses(401) } }, async (request) => {
    const auth = request.headers.authorization;
    return identity.userinfo(auth?.startsWith('Bearer ') ? auth.slice(7) : undefined);
  });

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
        token_endpoint_auth_method: Type.Optional(Type.Union([Type.Literal('client_secret_basic'), Type.Literal('client_secret_post'), Type.Literal('none')])),
        response_types: Type.Optional(Type.Array(Type.Union([Type.Literal('code'), Type.Literal('messenger_code'), Type.Literal('token')]), {
          minItems: 1, uniqueItems: true, description: 'token: login-as only, credentials in the query string',
        })),
        id_token_signed_response_alg: Type.Optional(Type.Union([Type.Literal('HS256'), Type.Literal('RS256')], {
          description: 'HS256 with the client secret (default) or RS256 with the keys at /.well-known/jwks.json (public clients: always RS256)',
        })),
        management_scopes: Type.Optional(Type.Array(Type.Union(MANAGEMENT_SCOPES.map((s) => Type.Literal(s))), {
          uniqueItems: true, description: 'Management API scopes this application may get with client credentials',
        })),
      }, { additionalProperties: false }),
      response: { 201: Type.Object({ client_id: Type.String(), client_secret: Type.Optional(Type.String()) }, { additionalProperties: true }), ...problemResponses(400, 401) },
    },
  }, async (request, reply) => reply.code(201).send(await identity.createApplication(request.body)));

  app.get('/admin/v1/identity/users/:id/events', {
    config: admin,
    schema: { tags: ['Operator'], summary: "A user's recent activity (logins)", security: [{ operatorToken: [] }], params: Type.Object({ id: Uuid() }) },
  }, async (request) => identity.events(request.params.id));
}
