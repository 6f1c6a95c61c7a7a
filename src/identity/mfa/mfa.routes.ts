// The second factor's pages (docs/identity.md "Second factor"): the sign-in's second step
// (POST /oauth/authorize/mfa), reached from every password sign-in of a user who has a
// factor, and the signed-in user's security page (/oauth/account/security): enrol a TOTP
// authenticator (shown as an otpauth:// URI and its base32 secret, active once confirmed
// with a current code), get recovery codes (shown once), remove the factor. Each change
// asks the password again. Forms carry the CSRF token of the login pages; the pages use
// their strict CSP. Passkeys (WebAuthn, passkeys.ts) sit beside TOTP: added, named and
// removed on the security page, offered at the second step ("Use a passkey") when the user
// has one. Only their forms run a script, payd's own (PASSKEY_SCRIPT, script-src 'self'):
// it reads the options from an inert JSON element, calls navigator.credentials and posts
// the answer as the form's `credential` field.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { isProblem, PROBLEM_TYPE } from '../../platform/http/problem.ts';
import { escapeHtml, sendPage } from '../../checkout/pages.ts';
import { type AuthRequest, AuthorizeError, type IdentityService, THROTTLE } from '../idp/idp.service.ts';
import { type AppRow, type UserRow, idpRepo } from '../idp/idp.repo.ts';
import type { Db } from '../../platform/db/index.ts';
import { type LoginPages, SESSION_COOKIE, cookies } from '../login/pages.ts';
import type { Complete } from '../login/consent.routes.ts';
import { MFA, type Mfa, PENDING_COOKIE, type SecondFactor } from './mfa.ts';
import { amrOf } from './amr.ts';
import { PASSKEYS, PasskeyRefused, type Passkeys, parseCredential, type PasskeyUse } from './passkeys.ts';
import { PASSKEY_SCRIPT, PASSKEY_SCRIPT_PATH } from './passkey-script.ts';

const FormBody = Type.Record(Type.String(), Type.String({ maxLength: 2048 }));
/** A form that may carry a passkey's answer (`credential`, a JSON text longer than other fields). */
const PasskeyFormBody = Type.Object({ credential: Type.Optional(Type.String({ maxLength: 16384 })) }, { additionalProperties: Type.String({ maxLength: 2048 }) });
/** The second factor a sign-in passed: recorded in its login event; amr (RFC 8176) for the lead's id_token work. */
export interface FactorUsed { factor: SecondFactor; amr: 'otp' | 'hwk' | 'swk' }
const inertJson = (value: unknown) => JSON.stringify(value).replace(/</g, '\\u003c');
const day = (d: Date) => escapeHtml(d.toISOString().slice(0, 10));
export const ACCOUNT_SECURITY = '/oauth/account/security';
/** Where a second step that is not of an authorization request goes (the account pages). */
const NEXT: Record<string, string> = { security: ACCOUNT_SECURITY, applications: '/oauth/account/applications' };

/** The sign-in's second step for a user whose password passed: undefined when the user has no factor. */
export type SecondStep = (
  request: FastifyRequest, reply: FastifyReply, user: { id: string }, target: { v: { request: AuthRequest; app: AppRow } } | { next: 'security' | 'applications' },
  how?: 'password' | 'social',
) => Promise<FastifyReply | undefined>;

export async function mfaRoutes(app: FastifyInstance, { db, identity, pages, mfa, passkeys, complete, baseUrl, consoleRequiresSecondFactor }: {
  db: Db; identity: IdentityService; pages: LoginPages; mfa: Mfa; passkeys: Passkeys; complete: () => Complete; baseUrl: string; consoleRequiresSecondFactor: boolean;
}): Promise<SecondStep> {
  const secure = baseUrl.startsWith('https://') ? '; Secure' : '';
  const setPending = (reply: FastifyReply, value: string, maxAge: number = MFA.pendingSeconds) =>
    reply.header('set-cookie', `${PENDING_COOKIE}=${value}; HttpOnly; SameSite=Lax; Path=/oauth; Max-Age=${maxAge}${secure}`);
  const alert = (m?: string) => (m ? `<p class="payd-error" role="alert">${escapeHtml(m)}</p>` : '');
  const refused = (reply: FastifyReply, what: string) =>
    sendPage(reply, 403, `${what} refused`, '<p role="alert">The form expired or did not come from this site. Go back and try again.</p>');

  /** The second step's page: "Use a passkey" when the user has one (a new challenge bound to this pending sign-in), and the code form. */
  const stepPage = async (request: FastifyRequest, reply: FastifyReply, pending: { userId: string; cookie: string }, r: AuthRequest | undefined, next: string | undefined, message?: string, status = 200) => {
    const fields = `${pages.formFields(request, reply, r)}${next ? `<input type="hidden" name="next" value="${escapeHtml(next)}">` : ''}`;
    const options = await passkeys.authenticationOptions(pending.userId, pending.cookie);
    const passkeyForm = options ? `
<form method="post" action="/oauth/authorize/mfa" class="payd-form" id="passkey-form" data-payd-passkey="get">
${fields}
<script type="application/json" data-payd-passkey-options>${inertJson(options)}</script>
<input type="hidden" name="credential" value="">
<p class="payd-error" role="alert" data-payd-passkey-error hidden></p>
<button type="submit" class="payd-pay">Use a passkey</button>
</form>
<p class="muted">Or enter a code:</p>` : '';
    return sendPage(reply, status, 'Second step: confirm it is you', `
<div class="card-box">
${alert(message)}${passkeyForm}
<form method="post" action="/oauth/authorize/mfa" class="payd-form">
${fields}
<div class="payd-field"><label for="code">Code from your authenticator app, or a recovery code</label><input id="code" name="code" autocomplete="one-time-code" inputmode="text" maxlength="40" required${options ? '' : ' autofocus'}></div>
<button type="submit" class="payd-pay">Continue</button>
</form></div>`, options ? [`<script src="${PASSKEY_SCRIPT_PATH}" defer></script>`] : [], undefined, 'any');
  };

  const step: SecondStep = async (request, reply, user, target, how = 'password') => {
    if (!(await mfa.hasFactor(user.id))) return undefined;
    const cookie = await mfa.startPending(user.id, how);
    setPending(reply, cookie);
    return 'v' in target ? stepPage(request, reply, { userId: user.id, cookie }, target.v.request, undefined) : stepPage(request, reply, { userId: user.id, cookie }, undefined, target.next);
  };

  app.get(PASSKEY_SCRIPT_PATH, { schema: { hide: true } }, async (_request, reply) =>
    reply.header('content-type', 'text/javascript; charset=utf-8').header('cache-control', 'public, max-age=3600').send(PASSKEY_SCRIPT));

  app.post('/oauth/authorize/mfa', { schema: { hide: true, body: PasskeyFormBody } }, async (request, reply) => {
    const body = request.body as Record<string, string>;
    const next = body.next && NEXT[body.next] ? body.next : undefined;
    let v: { request: AuthRequest; app: AppRow } | undefined;
    if (!next) {
      try {
        v = await identity.validate(body);
      } catch (err) {
        if (err instanceof AuthorizeError) return pages.errorPage(reply, err);
        throw err;
      }
    }
    if (!pages.csrfOk(request, body)) return refused(reply, 'Sign-in');
    const again = (message: string, status = 200) => (v ? pages.loginForm(request, reply, v.request, v.app.name, message, status) : accountLogin(request, reply, message, status));
    const cookie = cookies(request)[PENDING_COOKIE];
    const pending = await mfa.pendingUser(cookie);
    const userId = pending?.user_id;
    if (!userId || !cookie) return again('Your sign-in expired. Sign in again.');
    // A passkey's answer (the "Use a passkey" form), or a TOTP or recovery code.
    let how: 'otp' | 'recovery' | 'passkey' | undefined;
    let passkey: PasskeyUse | undefined;
    let refusal = 'That code is not valid. Enter a current code from your authenticator app, or an unused recovery code.';
    if (body.credential !== undefined) {
      try {
        passkey = await passkeys.authenticate(userId, cookie, parseCredential(body.credential));
        how = 'passkey';
      } catch (err) {
        if (!(err instanceof PasskeyRefused)) throw err;
        refusal = err.message;
      }
    } else {
      how = await mfa.verify(userId, body.code ?? '');
    }
    if (!how) {
      if (await mfa.failPending(cookie)) {
        setPending(reply, '', 0);
        return again('Too many wrong codes. Sign in again.', 429);
      }
      return stepPage(request, reply, { userId, cookie }, v?.request, next, refusal, 400);
    }
    await mfa.endPending(cookie);
    setPending(reply, '', 0);
    const user = await idpRepo.user(db, userId);
    if (!user || user.blocked) return again('Your sign-in expired. Sign in again.');
    // The factor passed: in the session's methods (amr, RFC 8176) and the login event.
    const factor: FactorUsed = { factor: how, amr: passkey ? passkey.amr : 'otp' };
    const session = await identity.newSession(user.id, amrOf(pending!.auth_type === 'social' ? 'fed' : 'pwd', factor.amr));
    pages.setSession(reply, session);
    if (!v) return reply.redirect(NEXT[next!]!, 303);
    return complete()(request, reply, v, user, new Date(), pending!.auth_type, session, factor);
  });

  // ---- the security page ----

  const accountLogin = (request: FastifyRequest, reply: FastifyReply, message?: string, status = 200) =>
    sendPage(reply, status, 'Sign in to manage your sign-in security', `
<div class="card-box">
${alert(message)}
<form method="post" action="${ACCOUNT_SECURITY}/login" class="payd-form">
${pages.formFields(request, reply)}
<div class="payd-field"><label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required autofocus></div>
<div class="payd-field"><label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required></div>
<button type="submit" class="payd-pay">Sign in</button>
</form></div>`);

  const passwordField = '<div class="payd-field"><label for="password">Your password (to confirm it is you)</label><input id="password" name="password" type="password" autocomplete="current-password" required></div>';

  const securityPage = async (request: FastifyRequest, reply: FastifyReply, user: UserRow, extra = '', message?: string, status = 200, scripts: string[] = []) => {
    const s = await mfa.status(user.id);
    const keys = await passkeys.list(user.id);
    const f = pages.formFields(request, reply);
    const totp = s.totp === 'active'
      ? `<p id="totp-status">Authenticator app: <strong>on</strong>. Unused recovery codes: <span id="recovery-left">${s.recoveryLeft}</span>.</p>
<form method="post" action="${ACCOUNT_SECURITY}/totp/remove" class="payd-form">${f}${passwordField.replace(/id="password"/g, 'id="password-remove"').replace('for="password"', 'for="password-remove"')}
<button type="submit" class="secondary">Remove the authenticator app</button></form>`
      : `<p id="totp-status">Authenticator app: <strong>off</strong>.</p>
<form method="post" action="${ACCOUNT_SECURITY}/totp/start" class="payd-form">${f}${passwordField}
<button type="submit" class="payd-pay">Add an authenticator app</button></form>`;
    // The recovery codes belong to the factors together: offered while any is on.
    const recovery = s.totp === 'active' || keys.length
      ? `<form method="post" action="${ACCOUNT_SECURITY}/recovery" class="payd-form">${f}${s.totp === 'active' ? '' : `<p id="passkey-recovery-left">Unused recovery codes: ${s.recoveryLeft}.</p>`}${passwordField.replace(/id="password"/g, 'id="password-recovery"').replace('for="password"', 'for="password-recovery"')}
<button type="submit" class="secondary">New recovery codes</button></form>`
      : '';
    const list = keys.map((k, i) => `<li><strong class="passkey-name">${escapeHtml(k.name)}</strong> <span class="muted">added ${day(k.created_at)}, ${k.last_used_at ? `last used ${day(k.last_used_at)}` : 'not used yet'}</span>
<form method="post" action="${ACCOUNT_SECURITY}/passkeys/remove" class="payd-form">${f}<input type="hidden" name="id" value="${escapeHtml(k.id)}">
<div class="payd-field"><label for="password-passkey-${i}">Your password, to remove ${escapeHtml(k.name)}</label><input id="password-passkey-${i}" name="password" type="password" autocomplete="current-password" required></div>
<button type="submit" class="secondary">Remove ${escapeHtml(k.name)}</button></form></li>`).join('');
    const passkeySection = `<section id="passkeys"><h2>Passkeys</h2>
<p id="passkeys-status">Passkeys: <strong>${keys.length ? keys.length : 'none'}</strong>.</p>${keys.length ? `<ul id="passkey-list">${list}</ul>` : ''}
${keys.length < PASSKEYS.maxPerUser ? `<form method="post" action="${ACCOUNT_SECURITY}/passkeys/start" class="payd-form">${f}
<div class="payd-field"><label for="passkey-name">Name of the passkey</label><input id="passkey-name" name="name" maxlength="${PASSKEYS.nameMax}" required placeholder="e.g. work laptop"></div>
<div class="payd-field"><label for="password-passkey">Confirm with your password</label><input id="password-passkey" name="password" type="password" autocomplete="current-password" required></div>
<button type="submit" class="payd-pay">Add a passkey</button></form>` : ''}
</section>`;
    return sendPage(reply, status, 'Sign-in security', `
<div class="card-box">
${alert(message)}
<p>Signed in as <strong>${escapeHtml(user.email)}</strong>.</p>
${extra}
${totp}
${passkeySection}
${recovery}
</div>`, scripts);
  };

  /** A passkey's name as typed, or the message that names the field. */
  const passkeyName = (raw: string | undefined): { name: string } | { error: string } => {
    const name = (raw ?? '').trim().replace(/\s+/g, ' ');
    if (!name || name.length > PASSKEYS.nameMax) return { error: `name: give the passkey a name of 1 to ${PASSKEYS.nameMax} characters.` };
    return { name };
  };

  const confirmForm = (request: FastifyRequest, reply: FastifyReply, e: { uri: string; secret: string }) => `
<section id="totp-enrol">
<p>Add this account to your authenticator app: open this link on the device, or type the secret key.</p>
<p><a id="totp-uri" href="${escapeHtml(e.uri)}">${escapeHtml(e.uri)}</a></p>
<p>Secret key: <code id="totp-secret">${escapeHtml(e.secret)}</code></p>
<form method="post" action="${ACCOUNT_SECURITY}/totp/confirm" class="payd-form">${pages.formFields(request, reply)}
<div class="payd-field"><label for="code">The code your app shows now</label><input id="code" name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxlength="6" required></div>
<button type="submit" class="payd-pay">Turn on</button></form>
</section>`;

  const codesShown = (codes: string[]) => `
<section id="recovery-codes"><p role="status">Your recovery codes. Keep them somewhere safe: each works once, and they are not shown again.</p>
<ul>${codes.map((c) => `<li><code>${escapeHtml(c)}</code></li>`).join('')}</ul></section>`;

  /** The signed-in user of a form of the security page, or the reply that refuses it. */
  const signedIn = async (request: FastifyRequest, reply: FastifyReply, body: Record<string, string>, needPassword: boolean) => {
    if (!pages.csrfOk(request, body)) return { reply: refused(reply, 'Change') };
    const s = await identity.sessionUser(cookies(request)[SESSION_COOKIE]);
    if (!s) return { reply: accountLogin(request, reply, 'Sign in again.', 401) };
    if (needPassword) {
      try {
        await identity.login(s.user.email, body.password ?? '', request.ip);
      } catch (err) {
        if (isProblem(err, PROBLEM_TYPE.unauthorized, PROBLEM_TYPE.tooManyRequests)) {
          const throttled = err.type === PROBLEM_TYPE.tooManyRequests;
          if (throttled) reply.header('retry-after', String(THROTTLE.windowSeconds));
          return { reply: await securityPage(request, reply, s.user, '', throttled ? err.detail : 'The password is not right.', throttled ? 429 : 400) };
        }
        throw err;
      }
    }
    return { user: s.user };
  };

  app.get(ACCOUNT_SECURITY, { schema: { hide: true } }, async (request, reply) => {
    const s = await identity.sessionUser(cookies(request)[SESSION_COOKIE]);
    if (!s) return accountLogin(request, reply);
    return securityPage(request, reply, s.user);
  });

  app.post(`${ACCOUNT_SECURITY}/login`, { schema: { hide: true, body: FormBody } }, async (request, reply) => {
    const body = request.body as Record<string, string>;
    if (!pages.csrfOk(request, body)) return refused(reply, 'Sign-in');
    try {
      const user = await identity.login(body.email ?? '', body.password ?? '', request.ip);
      const stepped = await step(request, reply, user, { next: 'security' });
      if (stepped) return stepped;
      pages.setSession(reply, await identity.newSession(user.id, amrOf('pwd')));
      return reply.redirect(ACCOUNT_SECURITY, 303);
    } catch (err) {
      if (isProblem(err, PROBLEM_TYPE.unauthorized, PROBLEM_TYPE.tooManyRequests)) {
        const throttled = err.type === PROBLEM_TYPE.tooManyRequests;
        if (throttled) reply.header('retry-after', String(THROTTLE.windowSeconds));
        return accountLogin(request, reply, err.detail, throttled ? 429 : 200);
      }
      throw err;
    }
  });

  app.post(`${ACCOUNT_SECURITY}/totp/start`, { schema: { hide: true, body: FormBody } }, async (request, reply) => {
    const body = request.body as Record<string, string>;
    const s = await signedIn(request, reply, body, true);
    if (!s.user) return s.reply;
    const e = await mfa.startTotp(s.user.id, s.user.email);
    if (!e) return securityPage(request, reply, s.user, '', 'An authenticator app is already on. Remove it first to add another.', 409);
    return securityPage(request, reply, s.user, confirmForm(request, reply, e));
  });

  app.post(`${ACCOUNT_SECURITY}/totp/confirm`, { schema: { hide: true, body: FormBody } }, async (request, reply) => {
    const body = request.body as Record<string, string>;
    const s = await signedIn(request, reply, body, false);
    if (!s.user) return s.reply;
    if (!(await mfa.confirmTotp(s.user.id, (body.code ?? '').replace(/\s/g, '')))) {
      const e = await mfa.pendingTotp(s.user.id, s.user.email);
      return securityPage(request, reply, s.user, e ? confirmForm(request, reply, e) : '',
        e ? 'code: that is not the current code of your app. Check the device clock and try the next code.' : 'Start adding an authenticator app first.', 400);
    }
    const codes = await mfa.newRecoveryCodes(s.user.id);
    return securityPage(request, reply, s.user, `<p role="status">The authenticator app is on.</p>${codesShown(codes)}`);
  });

  app.post(`${ACCOUNT_SECURITY}/recovery`, { schema: { hide: true, body: FormBody } }, async (request, reply) => {
    const body = request.body as Record<string, string>;
    const s = await signedIn(request, reply, body, true);
    if (!s.user) return s.reply;
    if (!(await mfa.hasFactor(s.user.id))) return securityPage(request, reply, s.user, '', 'Add an authenticator app or a passkey first.', 400);
    return securityPage(request, reply, s.user, codesShown(await mfa.newRecoveryCodes(s.user.id)));
  });

  /** Why the user's last second factor may not go (a merchant team or the console requires one); undefined when it may, or it is not the last. */
  const lastFactorKept = async (userId: string): Promise<string | undefined> => {
    if ((await mfa.factorCount(userId)) > 1) return undefined;
    const requiredBy = await idpRepo.secondFactorRequiredBy(db, userId, consoleRequiresSecondFactor);
    return requiredBy ? `${requiredBy} requires a second factor, and it is your last one. Add another first, or ask an administrator there to change this.` : undefined;
  };

  app.post(`${ACCOUNT_SECURITY}/totp/remove`, { schema: { hide: true, body: FormBody } }, async (request, reply) => {
    const body = request.body as Record<string, string>;
    const s = await signedIn(request, reply, body, true);
    if (!s.user) return s.reply;
    const kept = await lastFactorKept(s.user.id);
    if (kept) return securityPage(request, reply, s.user, '', `The authenticator app stays: ${kept}`, 409);
    await mfa.remove(s.user.id);
    return securityPage(request, reply, s.user, '<p role="status">The authenticator app is removed.</p>');
  });

  // ---- passkeys: the password again and a name, then the browser's answer to a challenge bound to the user ----

  app.post(`${ACCOUNT_SECURITY}/passkeys/start`, { schema: { hide: true, body: FormBody } }, async (request, reply) => {
    const body = request.body as Record<string, string>;
    const named = passkeyName(body.name);
    const s = await signedIn(request, reply, body, true);
    if (!s.user) return s.reply;
    if ('error' in named) return securityPage(request, reply, s.user, '', named.error, 400);
    if ((await passkeys.list(s.user.id)).length >= PASSKEYS.maxPerUser) {
      return securityPage(request, reply, s.user, '', `You have ${PASSKEYS.maxPerUser} passkeys: remove one first.`, 409);
    }
    const options = await passkeys.registrationOptions(s.user);
    return securityPage(request, reply, s.user, `
<section id="passkey-enrol">
<p>Create the passkey <strong>${escapeHtml(named.name)}</strong> with your device or security key.</p>
<form method="post" action="${ACCOUNT_SECURITY}/passkeys/finish" class="payd-form" id="passkey-form" data-payd-passkey="create">${pages.formFields(request, reply)}
<input type="hidden" name="name" value="${escapeHtml(named.name)}">
<script type="application/json" data-payd-passkey-options>${inertJson(options)}</script>
<input type="hidden" name="credential" value="">
<p class="payd-error" role="alert" data-payd-passkey-error hidden></p>
<button type="submit" class="payd-pay">Create the passkey</button></form>
</section>`, undefined, 200, [`<script src="${PASSKEY_SCRIPT_PATH}" defer></script>`]);
  });

  app.post(`${ACCOUNT_SECURITY}/passkeys/finish`, { schema: { hide: true, body: PasskeyFormBody } }, async (request, reply) => {
    const body = request.body as Record<string, string>;
    const s = await signedIn(request, reply, body, false); // the password was asked when the challenge was made (bound to this user, 5 minutes)
    if (!s.user) return s.reply;
    const named = passkeyName(body.name);
    if ('error' in named) return securityPage(request, reply, s.user, '', named.error, 400);
    let added;
    try {
      added = await passkeys.register(s.user.id, named.name, parseCredential(body.credential));
    } catch (err) {
      if (err instanceof PasskeyRefused) return securityPage(request, reply, s.user, '', err.message, 400);
      throw err;
    }
    // A first factor's recovery codes (none unused yet): shown once, as after an authenticator app.
    const codes = (await mfa.recoveryLeft(s.user.id)) === 0 ? codesShown(await mfa.newRecoveryCodes(s.user.id)) : '';
    return securityPage(request, reply, s.user, `<p role="status">The passkey ${escapeHtml(added.name)} is added.</p>${codes}`);
  });

  app.post(`${ACCOUNT_SECURITY}/passkeys/remove`, { schema: { hide: true, body: FormBody } }, async (request, reply) => {
    const body = request.body as Record<string, string>;
    const s = await signedIn(request, reply, body, true);
    if (!s.user) return s.reply;
    const kept = await lastFactorKept(s.user.id);
    if (kept) return securityPage(request, reply, s.user, '', `The passkey stays: ${kept}`, 409);
    if (!(await passkeys.remove(s.user.id, body.id ?? ''))) return securityPage(request, reply, s.user, '', 'id: that passkey is not one of yours (already removed?).', 404);
    await mfa.dropRecoveryIfNoFactor(s.user.id);
    return securityPage(request, reply, s.user, '<p role="status">The passkey is removed.</p>');
  });

  return step;
}
