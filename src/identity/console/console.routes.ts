// The identity administration console (server-rendered, at {console_origin}/console).
// Administrators sign in through the provider itself (the console is a first-party
// public client with PKCE); only users with is_admin get in. Pages: applications,
// Profiles (users) with Recent Activity and "Log in as".
import { createHash, createHmac, randomBytes, randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { safeEqual } from '../../platform/crypto/secrets.ts';
import { isProblem, Problem, PROBLEM_TYPE } from '../../platform/http/problem.ts';
import { Uuid } from '../../platform/http/schemas.ts';
import { escapeHtml as e, sendPage } from '../../checkout/pages.ts';
import { decodeJwt } from '../../platform/crypto/compact-jws.ts';
import type { Db } from '../../platform/db/index.ts';
import { sdkRepo } from '../sdk/sdk.repo.ts';
import { idpRepo } from '../idp/idp.repo.ts';
import type { IdentityService } from '../idp/idp.service.ts';
import type { ManagementService } from '../idp/management.ts';
import { AUTHORITY, MANAGEMENT_SCOPES } from '../idp/authority.ts';
import { hasSecondFactor } from '../mfa/amr.ts';
import { Mfa } from '../mfa/mfa.ts';

export const CONSOLE_CLIENT_ID = 'payd-console';
const COOKIE = 'payd_console';
const PKCE_COOKIE = 'payd_console_login';
const TTL_SECONDS = 8 * 3600;

export interface ConsoleDeps {
  db: Db;
  identity: IdentityService;
  management: ManagementService;
  consoleOrigin: string;
  key: Buffer;
  /** PAYD_CONSOLE_REQUIRE_MFA: the console is open only to a sign-in made with a second factor (amr mfa). */
  requireSecondFactor: boolean;
}

function cookie(request: FastifyRequest, name: string): string | undefined {
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k !== name) continue;
    try {
      return decodeURIComponent(v.join('='));
    } catch {
      return undefined; // a malformed cookie is no cookie (as in login/pages.ts)
    }
  }
  return undefined;
}

export async function consoleRoutes(app: FastifyInstance, deps: ConsoleDeps) {
  const mfa = new Mfa(deps.db, Buffer.alloc(0), ''); // (reads and removals only: no secret is decrypted here)
  const callback = `${deps.consoleOrigin}/console/callback`;
  await idpRepo.ensureConsoleApp(deps.db, CONSOLE_CLIENT_ID, callback, deps.consoleOrigin);
  const secure = deps.consoleOrigin.startsWith('https://') ? '; Secure' : '';
  const mac = (s: string) => createHmac('sha256', deps.key).update(s).digest('base64url');

  /** The console cookie: user, expiry and sign-in session id, signed; undefined when not valid. */
  const consoleCookie = (raw: string | undefined) => {
    const [userId, exp, sid, sig] = (raw ?? '').split('.');
    if (!userId || !exp || !sid || !sig || !safeEqual(mac(`${userId}.${exp}.${sid}`), sig) || !(Number(exp) > Date.now() / 1000)) return undefined;
    return { userId, sid };
  };

  /** The signed-in administrator, or a redirect to sign in / a 403 page. */
  const admin = async (request: FastifyRequest, reply: FastifyReply) => {
    const raw = cookie(request, COOKIE);
    const c = consoleCookie(raw);
    // The console session lives only as long as the provider's sign-in session it came
    // from: a sign-out at the provider, a password change or a block ends both.
    const alive = c ? await deps.identity.sessionAlive(c.sid, c.userId) : undefined;
    if (c && alive) {
      const user = await idpRepo.user(deps.db, c.userId);
      if (user?.is_admin && !user.blocked) {
        if (deps.requireSecondFactor && !hasSecondFactor(alive.amr)) {
          // Signed in with a password only: the console asks for the second factor first.
          layout(reply, 'A second factor is required', user.email, `<p role="alert">This console requires a second factor. <a href="/oauth/account/security">Add an authenticator app</a> to your account if you have none, then sign out and sign in again: the sign-in will ask for it.</p>`, 403, [], mac(`csrf.${raw}`));
          return undefined;
        }
        return { user, csrf: mac(`csrf.${raw}`), sid: c.sid };
      }
    }
    const verifier = randomBytes(32).toString('base64url');
    const state = randomBytes(16).toString('base64url');
    const url = new URL(`${deps.consoleOrigin}/oauth/authorize`);
    url.search = new URLSearchParams({
      response_type: 'code', client_id: CONSOLE_CLIENT_ID, redirect_uri: callback, scope: 'openid profile email', state,
      code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256',
    }).toString();
    reply.header('set-cookie', `${PKCE_COOKIE}=${state}.${verifier}; HttpOnly; SameSite=Lax; Path=/console${secure}`);
    reply.redirect(url.toString(), 303);
    return undefined;
  };
  const checkCsrf = (request: FastifyRequest, csrf: string) => {
    const given = (request.body as Record<string, string> | undefined)?.csrf;
    return typeof given === 'string' && safeEqual(given, csrf);
  };
  const layout = (reply: FastifyReply, title: string, email: string, body: string, status = 200, formOrigins: string[] = [], csrf?: string) =>
    sendPage(reply, status, title, `<nav class="muted"><a href="/console">Applications</a> · <a href="/console/users">Profiles</a> · <a href="/console/mail">Mail</a> · signed in as ${e(email)}${csrf
      ? ` · <form method="post" action="/console/logout" class="inline"><input type="hidden" name="csrf" value="${e(csrf)}"><button type="submit" class="link">Sign out</button></form>`
      : ''}</nav>${body}`, [], undefined, formOrigins);

  app.post('/console/logout', { schema: { hide: true, body: Type.Record(Type.String(), Type.String({ maxLength: 1000 })) } }, async (request, reply) => {
    const raw = cookie(request, COOKIE);
    const csrf = raw ? mac(`csrf.${raw}`) : undefined;
    if (!csrf || !checkCsrf(request, csrf)) return sendPage(reply, 403, 'Sign-out refused', '<p role="alert">The form expired; reload the page.</p>');
    // Signing out of the console signs out of the provider: the sign-in session ends, so
    // the next visit asks for the password instead of signing in again silently.
    const c = consoleCookie(raw);
    if (c) await deps.identity.endSessionById(c.sid);
    reply.header('set-cookie', `${COOKIE}=; Max-Age=0; HttpOnly; SameSite=Lax; Path=/console${secure}`);
    return sendPage(reply, 200, 'Signed out', '<p>You are signed out of the console. <a href="/console">Sign in again</a>.</p>');
  });

  app.get('/console/callback', { schema: { hide: true } }, async (request, reply) => {
    const q = request.query as Record<string, string>;
    const [state, verifier] = (cookie(request, PKCE_COOKIE) ?? '').split('.');
    if (!state || !verifier || q.state !== state || !q.code) return sendPage(reply, 400, 'Sign-in failed', '<p role="alert">The console sign-in did not complete. <a href="/console">Try again</a>.</p>');
    let userId: string;
    const sid = await deps.identity.codeSession(q.code);
    try {
      const tokens = await deps.identity.exchangeCode({}, { code: q.code, redirect_uri: callback, client_id: CONSOLE_CLIENT_ID, code_verifier: verifier });
      userId = String(decodeJwt(tokens.access_token).payload.sub);
    } catch (err) {
      if (err instanceof Problem) return sendPage(reply, 400, 'Sign-in failed', '<p role="alert">The console sign-in did not complete. <a href="/console">Try again</a>.</p>');
      throw err;
    }
    const user = await idpRepo.user(deps.db, userId);
    if (!user?.is_admin) return sendPage(reply, 403, 'Not an administrator', '<p role="alert">Only administrators may use the console.</p>');
    if (!sid) return sendPage(reply, 400, 'Sign-in failed', '<p role="alert">The console sign-in did not complete. <a href="/console">Try again</a>.</p>');
    const exp = Math.floor(Date.now() / 1000) + TTL_SECONDS;
    reply.header('set-cookie', [
      // Lax, not Strict: a link to the console from another site is a top-level GET whose
      // redirect chain stays cross-site, so a Strict cookie was never sent and every hop
      // signed in again (a redirect loop writing a login event per hop). GET pages change
      // nothing; every form carries the CSRF token, and Lax keeps the cookie off
      // cross-site POSTs anyway.
      `${COOKIE}=${userId}.${exp}.${sid}.${mac(`${userId}.${exp}.${sid}`)}; HttpOnly; SameSite=Lax; Path=/console${secure}`,
      `${PKCE_COOKIE}=; Max-Age=0; Path=/console`,
    ]);
    return reply.redirect('/console', 303);
  });

  app.get('/console', { schema: { hide: true } }, async (request, reply) => {
    const a = await admin(request, reply);
    if (!a) return reply;
    const apps = await idpRepo.apps(deps.db);
    const rows = apps.map((x) => `<tr><td>${x.client_id === CONSOLE_CLIENT_ID ? e(x.name) : `<a href="/console/applications/${encodeURIComponent(x.client_id)}">${e(x.name)}</a>`}</td><td><code>${e(x.client_id)}</code></td><td>${x.first_party ? 'yes' : 'no'}</td><td>${x.callback_urls.map(e).join('<br>')}</td><td>${x.allowed_origins.map(e).join('<br>')}</td></tr>`).join('');
    return layout(reply, 'Applications', a.user.email, `<div class="table-scroll"><table><caption>Applications</caption><thead><tr><th scope="col">Name</th><th scope="col">Client ID</th><th scope="col">First party</th><th scope="col">Allowed Callback URLs</th><th scope="col">Allowed Origins</th></tr></thead><tbody>${rows}</tbody></table></div>`, 200, [], a.csrf);
  });

  const AppParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) });
  const lines = (v: string | undefined) => (v ?? '').split(/\r?\n/).map((l) => l.trim()).filter(Boolean);
  // Management API scopes are granted here (or by the operator API), never through the
  // Management API itself (docs/identity.md, Who reaches what).
  const scopesField = (x: { client_id: string; token_endpoint_auth_method: string; management_scopes: string[] }) => x.token_endpoint_auth_method === 'none'
    ? '<p class="muted">A public client cannot get Management API scopes.</p>'
    : `<fieldset><legend>Management API scopes</legend><input type="hidden" name="scopes_form" value="1">${MANAGEMENT_SCOPES.map((s) => `
<div class="payd-choice"><input type="checkbox" id="scope-${e(s)}" name="scope" value="${e(s)}"${x.management_scopes.includes(s) ? ' checked' : ''}><label for="scope-${e(s)}"><code>${e(s)}</code>: ${e(AUTHORITY[s].reaches)}</label></div>`).join('')}</fieldset>`;
  const appForm = (reply: FastifyReply, email: string, csrf: string, x: { client_id: string; name: string; callback_urls: string[]; allowed_origins: string[]; token_endpoint_auth_method: string; management_scopes: string[] }, message?: string, status = 200) =>
    layout(reply, `Application: ${x.name}`, email, `
${message ? `<p class="payd-error" role="alert">${e(message)}</p>` : ''}
<p>Client ID <code>${e(x.client_id)}</code></p>
<form method="post" action="/console/applications/${encodeURIComponent(x.client_id)}" class="payd-form">
<input type="hidden" name="csrf" value="${csrf}">
<div class="payd-field"><label for="callbacks">Allowed Callback URLs (one per line)</label><textarea id="callbacks" name="callback_urls" rows="4">${e(x.callback_urls.join('\n'))}</textarea></div>
<div class="payd-field"><label for="origins">Allowed Origins (one per line)</label><textarea id="origins" name="allowed_origins" rows="3">${e(x.allowed_origins.join('\n'))}</textarea></div>
${scopesField(x)}
<button type="submit" class="payd-pay">Save</button>
</form>`, status);

  app.get<{ Params: { id: string } }>('/console/applications/:id', { schema: { hide: true, params: AppParams } }, async (request, reply) => {
    const a = await admin(request, reply);
    if (!a) return reply;
    const x = await idpRepo.app(deps.db, request.params.id);
    if (!x || x.client_id === CONSOLE_CLIENT_ID) return layout(reply, 'No such application', a.user.email, '<p>This application does not exist.</p>', 404);
    return appForm(reply, a.user.email, a.csrf, x);
  });

  app.post<{ Params: { id: string } }>('/console/applications/:id', {
    // `scope` repeats (one per checked box).
    schema: { hide: true, params: AppParams, body: Type.Record(Type.String(), Type.Union([Type.String({ maxLength: 50_000 }), Type.Array(Type.String({ maxLength: 100 }), { maxItems: 50 })])) },
  }, async (request, reply) => {
    const a = await admin(request, reply);
    if (!a) return reply;
    if (!checkCsrf(request, a.csrf)) return layout(reply, 'Refused', a.user.email, '<p role="alert">The form expired; reload the page.</p>', 403);
    const x = await idpRepo.app(deps.db, request.params.id);
    if (!x || x.client_id === CONSOLE_CLIENT_ID) return layout(reply, 'No such application', a.user.email, '<p>This application does not exist.</p>', 404);
    const body = request.body as Record<string, string | string[]>;
    const text = (v: string | string[] | undefined) => (Array.isArray(v) ? v.join('\n') : v);
    const checked = ([] as string[]).concat(body.scope ?? []);
    const unknown = checked.find((s) => !(MANAGEMENT_SCOPES as readonly string[]).includes(s));
    const patch = {
      callback_urls: lines(text(body.callback_urls)), allowed_origins: lines(text(body.allowed_origins)),
      ...(body.scopes_form && x.token_endpoint_auth_method !== 'none' ? { management_scopes: [...new Set(checked)] } : {}),
    };
    if (unknown !== undefined) return appForm(reply, a.user.email, a.csrf, { ...x, ...patch }, `${unknown} is not a Management API scope.`, 400);
    if (patch.callback_urls.length === 0) return appForm(reply, a.user.email, a.csrf, { ...x, ...patch }, 'At least one Allowed Callback URL is needed.', 400);
    try {
      await deps.identity.applications.update(x.client_id, patch, { via: 'console', name: a.user.email });
    } catch (err) {
      if (isProblem(err, PROBLEM_TYPE.invalidRequest)) return appForm(reply, a.user.email, a.csrf, { ...x, ...patch }, err.detail, 400);
      throw err;
    }
    return reply.redirect('/console', 303);
  });

  app.get('/console/users', { schema: { hide: true } }, async (request, reply) => {
    const a = await admin(request, reply);
    if (!a) return reply;
    const users = await deps.management.users(200);
    const items = users.map((u) => `<li><a href="/console/users/${u.id}">${e(u.email)}</a> ${e([u.given_name, u.family_name].filter(Boolean).join(' '))}${u.blocked ? ' (blocked)' : ''}</li>`).join('');
    return layout(reply, 'Profiles', a.user.email, `<ul>${items}</ul>`, 200, [], a.csrf);
  });

  // The identity mails, newest first, as the outbox keeps them: their links' tokens
  // redacted (mail.ts), so the console shows what was sent and whether, not a usable link.
  app.get('/console/mail', { schema: { hide: true } }, async (request, reply) => {
    const a = await admin(request, reply);
    if (!a) return reply;
    const mails = await sdkRepo.mails(deps.db, 100);
    const items = mails.map((m) => `<article class="mail"><h2>${e(m.subject)}</h2>
<p class="muted">To ${e(m.to_address)} · ${e(m.created_at.toISOString())} · ${m.transport === 'smtp' ? (m.sent_at ? 'sent by SMTP' : m.error ? `not sent: ${e(m.error)}` : 'sending') : 'outbox only (no SMTP server configured)'}</p>
<pre>${e(m.body)}</pre></article>`).join('');
    return layout(reply, 'Mail', a.user.email, items || '<p>No mail yet.</p>', 200, [], a.csrf);
  });

  const UserParams = Type.Object({ id: Uuid() });
  app.get<{ Params: { id: string } }>('/console/users/:id', { schema: { hide: true, params: UserParams } }, async (request, reply) => {
    const a = await admin(request, reply);
    if (!a) return reply;
    const user = await idpRepo.user(deps.db, request.params.id);
    if (!user) return layout(reply, 'No such profile', a.user.email, '<p>This user does not exist.</p>', 404);
    const events = await deps.identity.events(user.id);
    const apps = (await idpRepo.apps(deps.db)).filter((x) => x.first_party && x.client_id !== CONSOLE_CLIENT_ID);
    const options = apps.flatMap((x) => x.callback_urls.map((cb) => `<option value="${e(`${x.client_id} ${cb}`)}">${e(x.name)}: ${e(cb)}</option>`)).join('');
    const activity = events.map((ev) => `<li><time datetime="${ev.date.toISOString()}">${e(ev.date.toISOString())}</time> ${e(ev.type)} (${e(ev.auth_type)}${ev.amr?.length ? `, ${e(ev.amr.join(' + '))}` : ''}${ev.second_factor ? `, ${e(ev.second_factor)}` : ''}${ev.login_as_profile_id ? ` by ${e(ev.login_as_profile_id)}` : ''})</li>`).join('');
    return layout(reply, `Profile: ${user.email}`, a.user.email, `
<p>${e([user.given_name, user.family_name].filter(Boolean).join(' '))} · email ${user.email_verified ? 'verified' : 'not verified'}${user.blocked ? ' · blocked' : ''}</p>
<h2>Log in as</h2>
<form method="post" action="/console/users/${user.id}/login-as" class="payd-form">
<input type="hidden" name="csrf" value="${a.csrf}">
<div class="payd-field"><label for="target">Application and redirect URL</label><select id="target" name="target" required>${options}</select></div>
<fieldset><legend>Response type</legend>
<div class="payd-choice"><input type="radio" id="rt-code" name="response_type" value="code" checked><label for="rt-code">code</label></div>
<div class="payd-choice"><input type="radio" id="rt-token" name="response_type" value="token"><label for="rt-token">token</label></div></fieldset>
<button type="submit" class="payd-pay">Log in as ${e(user.email)}</button>
</form>
<h2>Second factor</h2>
${await mfa.hasFactor(user.id) ? `<p id="second-factor">Authenticator app: <strong>on</strong>.</p>
<form method="post" action="/console/users/${user.id}/second-factor/remove" class="payd-form">
<input type="hidden" name="csrf" value="${a.csrf}">
<p class="muted">For a user who lost their authenticator app and recovery codes: they sign in with the password alone next time, and add a new one (a team or this console that requires one asks them to).</p>
<button type="submit" class="secondary">Remove ${e(user.email)}'s second factor</button>
</form>` : '<p id="second-factor">Authenticator app: <strong>off</strong>.</p>'}
<h2>Recent Activity</h2>
<ul id="recent-activity">${activity || '<li>No activity yet.</li>'}</ul>`, 200, apps.flatMap((x) => x.callback_urls.map((cb) => new URL(cb).origin)), a.csrf);
  });

  // A lost second factor: an administrator removes it (recorded as an event of the user, by whom).
  app.post<{ Params: { id: string } }>('/console/users/:id/second-factor/remove', {
    schema: { hide: true, params: UserParams, body: Type.Record(Type.String(), Type.String({ maxLength: 1000 })) },
  }, async (request, reply) => {
    const a = await admin(request, reply);
    if (!a) return reply;
    if (!checkCsrf(request, a.csrf)) return layout(reply, 'Refused', a.user.email, '<p role="alert">The form expired; reload the page.</p>', 403);
    const user = await idpRepo.user(deps.db, request.params.id);
    if (!user) return layout(reply, 'No such profile', a.user.email, '<p>This user does not exist.</p>', 404);
    await deps.db.transaction(async (tx) => {
      await new Mfa(tx, Buffer.alloc(0), '').remove(user.id); // (no secret is read)
      await idpRepo.insertEvent(tx, {
        id: randomUUID(), user_id: user.id, type: 'second_factor_removed', auth_type: 'console', client_id: CONSOLE_CLIENT_ID,
        login_as_profile_id: a.user.email, login_as_actor: `user:${a.user.id}`,
      });
    });
    return reply.redirect(`/console/users/${user.id}`, 303);
  });

  app.post<{ Params: { id: string } }>('/console/users/:id/login-as', {
    schema: { hide: true, params: UserParams, body: Type.Record(Type.String(), Type.String({ maxLength: 4096 })) },
  }, async (request, reply) => {
    const a = await admin(request, reply);
    if (!a) return reply;
    if (!checkCsrf(request, a.csrf)) return layout(reply, 'Refused', a.user.email, '<p role="alert">The form expired; reload the page.</p>', 403);
    const body = request.body as Record<string, string>;
    const [clientId, redirectUri] = (body.target ?? '').split(' ');
    try {
      const { redirect_url } = await deps.management.loginAs({
        userId: request.params.id, clientId: clientId ?? '', redirectUri: redirectUri ?? '', responseType: body.response_type === 'token' ? 'token' : 'code', name: a.user.email, by: { consoleUser: a.user.id },
      });
      return reply.redirect(redirect_url, 303);
    } catch (err) {
      if (err instanceof Problem && err.status < 500) return layout(reply, 'Log in as refused', a.user.email, `<p role="alert">${e(err.detail ?? err.title)}</p>`, err.status);
      throw err;
    }
  });
}
