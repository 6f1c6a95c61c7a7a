// The signed-in user's security page (/oauth/account/security, docs/identity.md "Second
// factor"): its sign-in, and the authenticator app (TOTP: shown as an otpauth:// URI and its
// base32 secret, active once confirmed with a current code), recovery codes (shown once)
// and the app's removal. Each change asks the password again (account-security.ts); pages
// in mfa-pages.tsx. Passkeys: security-passkeys.routes.ts.
import type { FastifyInstance } from 'fastify';
import type { VNode } from 'preact';
import { Type } from 'typebox';
import { isProblem, PROBLEM_TYPE } from '../../platform/http/problem.ts';
import { type IdentityService, THROTTLE } from '../idp/idp.service.ts';
import { type LoginPages, formRefused } from '../login/pages.ts';
import type { Mfa } from './mfa.ts';
import { amrOf } from './amr.ts';
import { ACCOUNT_SECURITY, Done, RecoveryCodes, TotpEnrol } from './mfa-pages.tsx';
import type { AccountSecurity } from './account-security.ts';
import type { SecondStep } from './mfa.routes.ts';

const FormBody = Type.Record(Type.String(), Type.String({ maxLength: 2048 }));

export async function securityRoutes(app: FastifyInstance, { identity, pages, mfa, account, step }: {
  identity: IdentityService; pages: LoginPages; mfa: Mfa; account: AccountSecurity; step: SecondStep;
}) {
  app.get(ACCOUNT_SECURITY, { schema: { hide: true } }, async (request, reply) => {
    const s = await identity.sessionUser(pages.session(request));
    if (!s) return account.login(request, reply);
    return account.page(request, reply, s.user);
  });

  app.post(`${ACCOUNT_SECURITY}/login`, { schema: { hide: true, body: FormBody } }, async (request, reply) => {
    const body = request.body as Record<string, string>;
    if (!pages.csrfOk(request)) return formRefused(reply, 'Sign-in');
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
        return account.login(request, reply, err.detail, throttled ? 429 : 200);
      }
      throw err;
    }
  });

  // Page parts are components called as functions (no hooks): the routes stay .ts.
  const enrol = (e: { uri: string; secret: string }, fields: () => VNode) => TotpEnrol({ uri: e.uri, secret: e.secret, fields });

  app.post(`${ACCOUNT_SECURITY}/totp/start`, { schema: { hide: true, body: FormBody } }, async (request, reply) => {
    const s = await account.signedIn(request, reply, request.body as Record<string, string>, true);
    if (!s.user) return s.reply;
    const e = await mfa.startTotp(s.user.id, s.user.email);
    if (!e) return account.page(request, reply, s.user, { message: 'An authenticator app is already on. Remove it first to add another.', status: 409 });
    return account.page(request, reply, s.user, { extra: enrol(e, () => pages.fields(request, reply)) });
  });

  app.post(`${ACCOUNT_SECURITY}/totp/confirm`, { schema: { hide: true, body: FormBody } }, async (request, reply) => {
    const body = request.body as Record<string, string>;
    const s = await account.signedIn(request, reply, body, false);
    if (!s.user) return s.reply;
    if (!(await mfa.confirmTotp(s.user.id, (body.code ?? '').replace(/\s/g, '')))) {
      const e = await mfa.pendingTotp(s.user.id, s.user.email);
      return account.page(request, reply, s.user, {
        ...(e ? { extra: enrol(e, () => pages.fields(request, reply)) } : {}), status: 400,
        message: e ? 'code: that is not the current code of your app. Check the device clock and try the next code.' : 'Start adding an authenticator app first.',
      });
    }
    const codes = await mfa.newRecoveryCodes(s.user.id);
    return account.page(request, reply, s.user, { extra: Done({ message: 'The authenticator app is on.', codes }) });
  });

  app.post(`${ACCOUNT_SECURITY}/recovery`, { schema: { hide: true, body: FormBody } }, async (request, reply) => {
    const s = await account.signedIn(request, reply, request.body as Record<string, string>, true);
    if (!s.user) return s.reply;
    if (!(await mfa.hasFactor(s.user.id))) return account.page(request, reply, s.user, { message: 'Add an authenticator app or a passkey first.', status: 400 });
    return account.page(request, reply, s.user, { extra: RecoveryCodes({ codes: await mfa.newRecoveryCodes(s.user.id) }) });
  });

  app.post(`${ACCOUNT_SECURITY}/totp/remove`, { schema: { hide: true, body: FormBody } }, async (request, reply) => {
    const s = await account.signedIn(request, reply, request.body as Record<string, string>, true);
    if (!s.user) return s.reply;
    const kept = await account.lastFactorKept(s.user.id);
    if (kept) return account.page(request, reply, s.user, { message: `The authenticator app stays: ${kept}`, status: 409 });
    await mfa.remove(s.user.id);
    return account.page(request, reply, s.user, { extra: Done({ message: 'The authenticator app is removed.' }) });
  });
}
