// The identity SDK's API (`@reachfive/identity-core`, docs/identity-sdk.md): the
// endpoints under /identity/v1 that an unmodified SDK calls, configured with payd's
// domain and an application's client id. JSON in (the SDK sends camelCase converted to
// snake_case), JSON out, errors as {error, error_description, error_user_msg} (the SDK
// rejects its promise with them, camelCased). The same rules as the hosted login: the
// sign-in throttle, sign-up throttle, password rules, CORS only for Allowed Origins.
// A password login or a sign-up answers a one-time token (`tkn`, 60 s, single use, bound
// to the client) that the SDK hands to GET /oauth/authorize, where the sign-in session
// starts and the code is issued (idp.routes.ts).
import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Db } from '../../platform/db/index.ts';
import { sha256 } from '../../platform/crypto/secrets.ts';
import { isProblem, Problem, PROBLEM_BASE, PROBLEM_TYPE } from '../../platform/http/problem.ts';
import { escapeHtml, sendPage } from '../../checkout/pages.ts';
import { type AuthRequest, type IdentityService, THROTTLE } from '../idp/idp.service.ts';
import { type AppRow, idpRepo } from '../idp/idp.repo.ts';
import { SESSION_COOKIE, cookies, type LoginPages, validatedRequest } from '../login/pages.ts';
import type { Mailer } from './mail.ts';
import { passwordScore } from './password-strength.ts';
import { MIN_STRENGTH, PASSWORD_LENGTH, passwordProblem } from '../idp/password-policy.ts';
import type { SignUps } from '../idp/signup.ts';
import { sdkRepo } from './sdk.repo.ts';
import { amrOf } from '../mfa/amr.ts';

export const LOGIN_TOKEN_TTL_SECONDS = 60;
export const RESET_TTL_SECONDS = 30 * 60;
/** Reset links per user per hour: a cap on mail bombing through "forgot password". */
export const RESETS_PER_HOUR = 3;

const hex = (s: string) => sha256(s).toString('hex');
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** An error as the SDK reads it: {error, error_description, error_user_msg}. */
export function sdkError(status: number, error: string, description: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}): Problem {
  return new Problem({
    status, type: `${PROBLEM_BASE}identity:${error}`, title: description, detail: description,
    extra: { error, error_description: description, error_user_msg: description, ...extra }, headers,
  });
}

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
  const json = { oauthErrors: () => true };
  // Documented in docs/identity-sdk.md (the SDK's wire contract), not in the OpenAPI
  // document, as the hosted login's own endpoints.

  const application = async (clientId: unknown): Promise<AppRow> => {
    const a = typeof clientId === 'string' && clientId !== '' ? await idpRepo.app(db, clientId) : undefined;
    if (!a) throw sdkError(400, 'invalid_client', 'Unknown or missing client_id.');
    return a;
  };
  const loginToken = async (a: AppRow, userId: string, authType: 'password' | 'signup') => {
    const tkn = randomBytes(32).toString('base64url');
    await sdkRepo.insertLoginToken(db, { token_hash: hex(tkn), client_id: a.client_id, user_id: userId, auth_type: authType, ttlSeconds: LOGIN_TOKEN_TTL_SECONDS });
    return { tkn, mfa_required: false };
  };
  /** A URL the browser may be sent to after logout or a reset: an Allowed Callback URL, or on an Allowed Origin. */
  const allowedReturn = async (url: string | undefined, a?: AppRow): Promise<string | undefined> => {
    if (!url || url.length > 2048 || !URL.canParse(url)) return undefined;
    const u = new URL(url);
    if (u.username || u.password || (u.protocol !== 'https:' && u.protocol !== 'http:')) return undefined;
    if (a) return a.callback_urls.includes(url) || a.allowed_origins.includes(u.origin) ? url : undefined;
    return (await idpRepo.originAllowed(db, u.origin)) || (await idpRepo.callbackRegistered(db, url)) ? url : undefined;
  };

  // ---- start-up ----

  app.get('/identity/v1/config', {
    config: json,
    schema: {
      hide: true, summary: 'The settings the SDK reads at start (RemoteSettings)',
      querystring: Type.Object({ client_id: Type.String({ maxLength: 100 }), lang: Type.Optional(Type.String({ maxLength: 20 })), google_variant: Type.Optional(Type.String({ maxLength: 50 })) }),
    },
  }, async (request) => {
    const a = await application(request.query.client_id);
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

  // ---- password login and sign-up: a one-time token for /oauth/authorize ----

  const LoginBody = Type.Object({
    client_id: Type.String({ maxLength: 100 }),
    email: Type.Optional(Type.String({ maxLength: 254 })), phone_number: Type.Optional(Type.String({ maxLength: 30 })),
    custom_identifier: Type.Optional(Type.String({ maxLength: 254 })),
    password: Type.String({ maxLength: PASSWORD_LENGTH.max }), scope: Type.Optional(Type.String({ maxLength: 500 })),
  }, { additionalProperties: true });
  app.post('/identity/v1/password/login', {
    config: json,
    schema: { hide: true, summary: 'Password login: a one-time token (tkn) for /oauth/authorize', body: LoginBody },
  }, async (request) => {
    const a = await application(request.body.client_id);
    if (!request.body.email) throw sdkError(400, 'invalid_request', 'Sign in with your email address.');
    try {
      const user = await identity.login(request.body.email, request.body.password, request.ip);
      return await loginToken(a, user.id, 'password');
    } catch (err) {
      if (isProblem(err, PROBLEM_TYPE.unauthorized)) throw sdkError(400, 'invalid_grant', 'Invalid email or password.');
      if (isProblem(err, PROBLEM_TYPE.tooManyRequests)) {
        throw sdkError(429, 'too_many_attempts', err.detail ?? 'Too many failed sign-in attempts.', {}, { 'retry-after': err.headers?.['retry-after'] ?? '1' });
      }
      throw err;
    }
  });

  app.post('/identity/v1/signup', {
    config: json,
    schema: {
      hide: true, summary: 'Sign-up: a mail to the address (a confirmation link, or a notice to an existing account); {} either way',
      body: Type.Object({
        client_id: Type.String({ maxLength: 100 }), redirect_url: Type.Optional(Type.String({ maxLength: 2048 })), scope: Type.Optional(Type.String({ maxLength: 500 })),
        return_to_after_email_confirmation: Type.Optional(Type.String({ maxLength: 2048 })),
        data: Type.Object({
          email: Type.Optional(Type.String({ maxLength: 254 })), password: Type.String({ maxLength: PASSWORD_LENGTH.max }),
          given_name: Type.Optional(Type.String({ maxLength: 100 })), family_name: Type.Optional(Type.String({ maxLength: 100 })),
        }, { additionalProperties: true }),
      }, { additionalProperties: true }),
    },
  }, async (request, reply) => {
    const a = await application(request.body.client_id);
    const { data } = request.body;
    const email = (data.email ?? '').trim();
    if (!EMAIL.test(email) || email.length > 254) {
      throw sdkError(400, 'invalid_request', 'Enter a valid email address.', { error_details: [{ field: 'data.email', message: 'Enter a valid email address.', code: 'email' }] });
    }
    // The same answer whether the address has an account or not (idp/signup.ts): {} (no
    // tkn: the SDK resolves with {}), and a mail; the new user's link creates the account.
    try {
      await signups.request({
        email, password: data.password, given_name: data.given_name, family_name: data.family_name, client_id: a.client_id, app_name: a.name,
        return_to: await allowedReturn(request.body.return_to_after_email_confirmation ?? request.body.redirect_url, a),
      }, request.ip);
    } catch (err) {
      const weak = passwordProblem(err); // the password rule (password-policy.ts)
      if (weak) throw sdkError(400, 'invalid_request', weak, { error_details: [{ field: 'data.password', message: weak, code: 'password.policy' }] });
      if (isProblem(err, PROBLEM_TYPE.tooManyRequests)) {
        reply.header('retry-after', String(THROTTLE.windowSeconds));
        throw sdkError(429, 'too_many_attempts', err.detail ?? 'Too many sign-ups.', {}, { 'retry-after': String(THROTTLE.windowSeconds) });
      }
      throw err;
    }
    return {};
  });

  app.post('/identity/v1/password/strength', {
    config: json,
    schema: {
      hide: true, summary: 'Password strength: {score: 0..4} (zxcvbn)',
      body: Type.Object({ client_id: Type.Optional(Type.String({ maxLength: 100 })), password: Type.String({ maxLength: 1024 }) }, { additionalProperties: true }),
    },
  }, async (request) => ({ score: await passwordScore(request.body.password) }));

  // ---- the signed-in user ----

  app.get('/identity/v1/userinfo', {
    config: json,
    schema: { hide: true, summary: 'The profile of the access token\'s user', querystring: Type.Object({ fields: Type.Optional(Type.String({ maxLength: 1000 })) }, { additionalProperties: true }) },
  }, async (request) => {
    const auth = request.headers.authorization;
    const claims = await identity.userinfo(auth?.startsWith('Bearer ') ? auth.slice(7) : undefined);
    const { sub, ...rest } = claims as Record<string, unknown> & { sub: string };
    const profile: Record<string, unknown> = { id: sub, ...rest };
    if (rest.given_name || rest.family_name) profile.name = [rest.given_name, rest.family_name].filter(Boolean).join(' ');
    const fields = request.query.fields?.split(',').map((f) => f.trim()).filter(Boolean);
    return fields?.length ? Object.fromEntries(Object.entries(profile).filter(([k]) => k === 'id' || fields.includes(k))) : profile;
  });

  app.get('/identity/v1/sso/data', {
    config: json,
    schema: { hide: true, summary: 'Whether the browser has a sign-in session, and whose', querystring: Type.Object({ client_id: Type.String({ maxLength: 100 }) }) },
  }, async (request, reply) => {
    await application(request.query.client_id);
    reply.header('cache-control', 'no-store');
    const session = await identity.sessionUser(cookies(request)[SESSION_COOKIE]);
    if (!session) return { is_authenticated: false };
    const last = (await identity.events(session.user.id))[0];
    const { user } = session;
    return {
      is_authenticated: true, email: user.email, ...(user.given_name || user.family_name ? { name: [user.given_name, user.family_name].filter(Boolean).join(' ') } : {}),
      last_login_type: last?.auth_type ?? 'password', has_password: true, social_providers: [],
    };
  });

  /**
   * The SDK's logout (a navigation). A request from a page of an Allowed Origin (the
   * browser's Origin or Referer) signs out at once; from anywhere else a signed-in browser
   * is asked first (the hosted confirmation), so that another site cannot sign the user
   * out with a link. redirect_to: only an Allowed Callback URL or a URL on an Allowed Origin.
   */
  app.get('/identity/v1/logout', {
    schema: { hide: true, summary: 'Logout (the SDK\'s)', querystring: Type.Object({ redirect_to: Type.Optional(Type.String({ maxLength: 2048 })) }, { additionalProperties: true }) },
  }, async (request, reply) => {
    const cookie = cookies(request)[SESSION_COOKIE];
    const session = await identity.sessionUser(cookie);
    const from = originOf(request);
    const proven = request.headers['sec-fetch-site'] === 'same-origin' || (from !== undefined && (from === new URL(baseUrl).origin || await idpRepo.originAllowed(db, from)));
    if (session && !proven) return pages.logoutConfirm(request, reply, {});
    await identity.endSession(cookie);
    pages.clearSession(reply);
    const next = await allowedReturn(request.query.redirect_to);
    if (next) return reply.redirect(next, 302);
    return sendPage(reply, 200, 'You are signed out', '<p role="status">You are signed out.</p>');
  });

  // ---- forgotten password ----

  app.post('/identity/v1/forgot-password', {
    config: json,
    schema: {
      hide: true, summary: 'Sends a password reset link (the answer is the same whether the address has an account)',
      body: Type.Object({
        client_id: Type.String({ maxLength: 100 }), email: Type.Optional(Type.String({ maxLength: 254 })),
        redirect_url: Type.Optional(Type.String({ maxLength: 2048 })), return_to: Type.Optional(Type.String({ maxLength: 2048 })),
      }, { additionalProperties: true }),
    },
  }, async (request, reply) => {
    const a = await application(request.body.client_id);
    const email = (request.body.email ?? '').trim();
    if (!EMAIL.test(email)) throw sdkError(400, 'invalid_request', 'Enter a valid email address.');
    await sendReset(a, email, await allowedReturn(request.body.return_to ?? request.body.redirect_url, a));
    return reply.code(204).send();
  });

  /** The reset mail, when the address has an account that may get one (at most RESETS_PER_HOUR an hour); nothing is said either way. */
  async function sendReset(a: { client_id: string; name: string }, email: string, returnTo: string | undefined) {
    const user = await idpRepo.userByEmail(db, email);
    if (user && !user.blocked && (await sdkRepo.recentResets(db, user.id, 3600)) < RESETS_PER_HOUR) {
      const token = randomBytes(32).toString('base64url');
      await sdkRepo.insertReset(db, { token_hash: hex(token), user_id: user.id, client_id: a.client_id, return_to: returnTo ?? null, ttlSeconds: RESET_TTL_SECONDS });
      const link = `${baseUrl}/identity/v1/password/reset?token=${token}`;
      await mailer.send(user.email, `Reset your ${a.name} password`,
        `Someone asked to reset the password of your ${a.name} account (${user.email}).\n\n`
        + `To choose a new password, open this link within 30 minutes:\n${link}\n\n`
        + 'If it was not you, ignore this mail: your password stays as it is.\n');
    }
  }

  // "Forgot password?" of the hosted sign-in page (the dashboard's too): the same reset
  // mail, the same answer whatever the address. The page carries the authorization
  // request, so that the reset page's Continue link starts the sign-in again.
  const forgotPage = (request: FastifyRequest, reply: FastifyReply, r: AuthRequest, appName: string, message?: string, status = 200) => sendPage(reply, status, `Reset your ${appName} password`, `
<div class="card-box">
${message ? `<p class="payd-error" role="alert">${escapeHtml(message)}</p>` : ''}
<form method="post" action="/oauth/authorize/forgot" class="payd-form">
${pages.formFields(request, reply, r)}
<div class="payd-field"><label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required autofocus maxlength="254"></div>
<button type="submit" class="payd-pay">Send me a reset link</button>
</form></div>`);
  const validated = (reply: FastifyReply, fields: Record<string, unknown>) => validatedRequest(identity, pages, reply, fields);
  app.get('/oauth/authorize/forgot', { schema: { hide: true } }, async (request, reply) => {
    const v = await validated(reply, request.query as Record<string, unknown>);
    return v ? forgotPage(request, reply, v.request, v.app.name) : reply;
  });
  app.post('/oauth/authorize/forgot', { schema: { hide: true, body: Type.Record(Type.String(), Type.String({ maxLength: 2048 })) } }, async (request, reply) => {
    const body = request.body as Record<string, string>;
    const v = await validated(reply, body);
    if (!v) return reply;
    if (!pages.csrfOk(request, body)) {
      return sendPage(reply, 403, 'Reset refused', '<p role="alert">The form expired or did not come from this site. Go back and try again.</p>');
    }
    const email = (body.email ?? '').trim();
    if (!EMAIL.test(email) || email.length > 254) return forgotPage(request, reply, v.request, v.app.name, 'Email: enter a valid email address.', 400);
    const fields = new URLSearchParams(Object.entries(body).filter(([k]) => k !== 'csrf' && k !== 'email'));
    await sendReset(v.app, email, `${baseUrl}/oauth/authorize?${fields}`);
    return sendPage(reply, 200, 'Check your mail', '<div class="card-box"><p role="status">If an account exists for that address, we sent it a link to choose a new password. The link works once, for 30 minutes.</p></div>');
  });

  const resetForm = (reply: FastifyReply, token: string, message?: string, status = 200) => sendPage(reply, status, 'Choose a new password', `
${message ? `<p class="payd-error" role="alert">${escapeHtml(message)}</p>` : ''}
<form method="post" action="/identity/v1/password/reset">
<input type="hidden" name="token" value="${escapeHtml(token)}">
<label for="password">New password (${PASSWORD_LENGTH.min} characters or more)</label>
<input id="password" name="password" type="password" autocomplete="new-password" required minlength="${PASSWORD_LENGTH.min}" maxlength="${PASSWORD_LENGTH.max}">
<button type="submit">Change the password</button>
</form>`);
  const expired = (reply: FastifyReply) => sendPage(reply, 400, 'This link does not work any more',
    '<p role="alert">The link has expired or was already used. Ask for a new one from the sign-in page.</p>');

  app.get('/identity/v1/password/reset', {
    schema: { hide: true, querystring: Type.Object({ token: Type.String({ maxLength: 100 }) }) },
  }, async (request, reply) => {
    const r = await sdkRepo.reset(db, hex(request.query.token), false);
    return r ? resetForm(reply, request.query.token) : expired(reply);
  });

  // The token in the form is the proof (nobody without the mailed link can post it).
  app.post('/identity/v1/password/reset', {
    schema: { hide: true, body: Type.Object({ token: Type.String({ maxLength: 100 }), password: Type.String({ maxLength: 1024 }) }, { additionalProperties: true }) },
  }, async (request, reply) => {
    const { token, password } = request.body;
    if (!(await sdkRepo.reset(db, hex(token), false))) return expired(reply);
    let done;
    try {
      done = await identity.resetPassword(hex(token), password);
    } catch (err) {
      const weak = passwordProblem(err); // the password rule (password-policy.ts)
      if (weak) return resetForm(reply, token, weak, 400);
      throw err;
    }
    if (!done) return expired(reply);
    const back = done.return_to ? `<p><a href="${escapeHtml(done.return_to)}">Continue</a></p>` : '';
    return sendPage(reply, 200, 'Your password is changed', `<p role="status">Your password is changed. Every session that used the old one is signed out.</p>${back}`);
  });

  // ---- sign-up confirmation (the link mailed by idp/signup.ts) ----

  const confirmForm = (reply: FastifyReply, token: string) => sendPage(reply, 200, 'Create your account', `
<p>Confirm your address to create your account and sign in.</p>
<form method="post" action="/identity/v1/signup/confirm">
<input type="hidden" name="token" value="${escapeHtml(token)}">
<button type="submit">Create my account</button>
</form>`, [], undefined, 'any'); // its post ends at the application: no form-action (see login/pages.ts endsAtClient)
  const confirmExpired = (reply: FastifyReply) => sendPage(reply, 400, 'This link does not work any more',
    '<p role="alert">The link has expired or was already used. Sign in, or sign up again.</p>');

  // GET only shows the form: a mail scanner that opens links does not use the token.
  app.get('/identity/v1/signup/confirm', {
    schema: { hide: true, querystring: Type.Object({ token: Type.String({ maxLength: 100 }) }) },
  }, async (request, reply) => ((await signups.valid(request.query.token)) ? confirmForm(reply, request.query.token) : confirmExpired(reply)));

  app.post('/identity/v1/signup/confirm', {
    schema: { hide: true, body: Type.Object({ token: Type.String({ maxLength: 100 }) }, { additionalProperties: true }) },
  }, async (request, reply) => {
    const done = await signups.confirm(request.body.token);
    if (!done) return confirmExpired(reply);
    if (done === 'taken') return sendPage(reply, 409, 'You already have an account', '<p role="alert">An account with this address exists already: sign in with its password.</p>');
    pages.setSession(reply, await identity.newSession(done.user.id, amrOf('mail')));
    if (done.return_to) return reply.redirect(done.return_to, 303);
    return sendPage(reply, 200, 'Your account is ready', '<p role="status">Your account is ready, and you are signed in.</p>');
  });
}

/** The origin of the page that sent the browser here (Origin, else Referer), if it says. */
function originOf(request: FastifyRequest): string | undefined {
  const origin = request.headers.origin;
  if (typeof origin === 'string' && origin !== 'null') return origin;
  const referer = request.headers.referer;
  return typeof referer === 'string' && URL.canParse(referer) ? new URL(referer).origin : undefined;
}
