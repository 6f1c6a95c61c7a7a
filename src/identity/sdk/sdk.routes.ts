// The identity SDK's API (`@reachfive/identity-core`, docs/identity-sdk.md): the
// endpoints under /identity/v1 that an unmodified SDK calls, configured with payd's
// domain and an application's client id. JSON in (the SDK sends camelCase converted to
// snake_case), JSON out, errors as {error, error_description, error_user_msg} (errors.ts).
// The same rules as the hosted login: the sign-in throttle, sign-up throttle, password
// rules, CORS only for Allowed Origins. A password login or a sign-up answers a one-time
// token (`tkn`, 60 s, single use, bound to the client) that the SDK hands to GET
// /oauth/authorize, where the sign-in session starts and the code is issued
// (idp.routes.ts). Here: start-up, login, password strength; sign-up and its confirmation
// page in signup.routes.tsx, the signed-in user and logout in session.routes.tsx, a
// forgotten password in reset.routes.tsx. Storage only through SdkService.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Db } from '../../platform/db/index.ts';
import { isProblem, PROBLEM_TYPE } from '../../platform/http/problem.ts';
import type { IdentityService } from '../idp/idp.service.ts';
import type { LoginPages } from '../login/pages.ts';
import type { Mailer } from './mail.ts';
import { passwordScore } from './password-strength.ts';
import { MIN_STRENGTH, PASSWORD_LENGTH } from '../idp/password-policy.ts';
import type { SignUps } from '../idp/signup.ts';
import { SDK_JSON, sdkError } from './errors.ts';
import { SdkService } from './sdk.service.ts';
import { resetRoutes } from './reset.routes.tsx';
import { sdkSessionRoutes } from './session.routes.tsx';
import { signupRoutes } from './signup.routes.tsx';

export { sdkError } from './errors.ts';
export { LOGIN_TOKEN_TTL_SECONDS, RESET_TTL_SECONDS, RESETS_PER_HOUR } from './sdk.service.ts';

export interface SdkDeps {
  db: Db;
  identity: IdentityService;
  pages: LoginPages;
  mailer: Mailer;
  baseUrl: string;
  signups: SignUps;
}

export async function sdkRoutes(root: FastifyInstance, { db, identity, pages, mailer, baseUrl, signups }: SdkDeps) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const sdk = new SdkService(db, identity, mailer, baseUrl);
  // Documented in docs/identity-sdk.md (the SDK's wire contract), not in the OpenAPI
  // document, as the hosted login's own endpoints.

  app.get('/identity/v1/config', {
    config: SDK_JSON,
    schema: {
      hide: true, summary: 'The settings the SDK reads at start (RemoteSettings)',
      querystring: Type.Object({ client_id: Type.String({ maxLength: 100 }), lang: Type.Optional(Type.String({ maxLength: 20 })), google_variant: Type.Optional(Type.String({ maxLength: 50 })) }),
    },
  }, async (request) => {
    const a = await sdk.application(request.query.client_id);
    const isPublic = a.token_endpoint_auth_method === 'none';
    return {
      sso: true, sms: false, web_authn: false, language: (request.query.lang ?? 'en').slice(0, 2), country_code: null,
      pkce_enforced: isPublic, is_public: isPublic, scope: 'openid profile email',
      social_providers: [], consents: [], custom_fields: [], resource_base_url: baseUrl,
      password_policy: {
        min_length: PASSWORD_LENGTH.min, min_strength: MIN_STRENGTH, uppercase_characters: 0, special_characters: 0, lowercase_characters: 0,
        digit_characters: 0, allow_update_with_access_token_only: false,
      },
      mfa_sms_enabled: false, mfa_email_enabled: false, rba_enabled: false, is_implicit_flow_forbidden: true,
      login_type_allowed: { password: true, passwordless: false, social_login: false, web_authn: false },
    };
  });

  // ---- password login: a one-time token for /oauth/authorize ----

  const LoginBody = Type.Object({
    client_id: Type.String({ maxLength: 100 }),
    email: Type.Optional(Type.String({ maxLength: 254 })), phone_number: Type.Optional(Type.String({ maxLength: 30 })),
    custom_identifier: Type.Optional(Type.String({ maxLength: 254 })),
    password: Type.String({ maxLength: PASSWORD_LENGTH.max }), scope: Type.Optional(Type.String({ maxLength: 500 })),
  }, { additionalProperties: true });
  app.post('/identity/v1/password/login', {
    config: SDK_JSON,
    schema: { hide: true, summary: 'Password login: a one-time token (tkn) for /oauth/authorize', body: LoginBody },
  }, async (request) => {
    const a = await sdk.application(request.body.client_id);
    if (!request.body.email) throw sdkError(400, 'invalid_request', 'Sign in with your email address.');
    try {
      const user = await identity.login(request.body.email, request.body.password, request.ip);
      return await sdk.loginToken(a, user.id, 'password');
    } catch (err) {
      if (isProblem(err, PROBLEM_TYPE.unauthorized)) throw sdkError(400, 'invalid_grant', 'Invalid email or password.');
      if (isProblem(err, PROBLEM_TYPE.tooManyRequests)) {
        throw sdkError(429, 'too_many_attempts', err.detail ?? 'Too many failed sign-in attempts.', {}, { 'retry-after': err.headers?.['retry-after'] ?? '1' });
      }
      throw err;
    }
  });

  app.post('/identity/v1/password/strength', {
    config: SDK_JSON,
    schema: {
      hide: true, summary: 'Password strength: {score: 0..4} (zxcvbn)',
      body: Type.Object({ client_id: Type.Optional(Type.String({ maxLength: 100 })), password: Type.String({ maxLength: 1024 }) }, { additionalProperties: true }),
    },
  }, async (request) => ({ score: await passwordScore(request.body.password) }));

  await sdkSessionRoutes(root, { sdk, identity, pages, baseUrl });
  await resetRoutes(root, { sdk, identity, pages, baseUrl });
  await signupRoutes(root, { sdk, identity, pages, signups });
}
