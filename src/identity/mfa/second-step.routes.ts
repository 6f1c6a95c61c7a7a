// The sign-in's second step (POST /oauth/authorize/mfa), reached from every password (or
// social) sign-in of a user who has a factor, before any session: the pending sign-in is
// the signed cookie payd_idp_mfa (mfa.ts keeps its row), the page offers "Use a passkey"
// when the user has one and a code form (mfa-pages.tsx). Also serves the passkey forms'
// script (passkey-script.ts).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { clearCookie, readSignedCookie, setSignedCookie } from '../../web/index.ts';
import { type AppRow, type AuthRequest, AuthorizeError, type IdentityService } from '../idp/idp.service.ts';
import { type LoginPages, formRefused } from '../login/pages.ts';
import type { Complete } from '../login/consent.routes.ts';
import { MFA, type Mfa, PENDING_COOKIE } from './mfa.ts';
import { amrOf } from './amr.ts';
import { PasskeyRefused, type Passkeys, parseCredential, type PasskeyUse } from './passkeys.ts';
import { PASSKEY_SCRIPT, PASSKEY_SCRIPT_PATH } from './passkey-script.ts';
import { ACCOUNT_SECURITY, stepPage } from './mfa-pages.tsx';
import type { AccountSecurity } from './account-security.ts';
import type { FactorUsed, SecondStep } from './mfa.routes.ts';

/** A form that may carry a passkey's answer (`credential`, a JSON text longer than other fields). */
const PasskeyFormBody = Type.Object({ credential: Type.Optional(Type.String({ maxLength: 16384 })) }, { additionalProperties: Type.String({ maxLength: 2048 }) });
/** Where a second step that is not of an authorization request goes (the account pages). */
const NEXT: Record<string, string> = { security: ACCOUNT_SECURITY, applications: '/oauth/account/applications' };

export async function secondStepRoutes(app: FastifyInstance, { identity, pages, mfa, passkeys, complete, account }: {
  identity: IdentityService; pages: LoginPages; mfa: Mfa; passkeys: Passkeys; complete: () => Complete; account: AccountSecurity;
}): Promise<SecondStep> {
  const pendingScope = pages.cookies.shortScope('/oauth');
  const endPending = (reply: FastifyReply) => clearCookie(reply, PENDING_COOKIE, pendingScope);

  /** The second step's page: "Use a passkey" when the user has one (a new challenge bound to this pending sign-in), and the code form. */
  const page = async (request: FastifyRequest, reply: FastifyReply, pending: { userId: string; cookie: string }, r: AuthRequest | undefined, next: string | undefined, message?: string, status = 200) => {
    const options = await passkeys.authenticationOptions(pending.userId, pending.cookie);
    return stepPage(reply, status, { fields: () => pages.fields(request, reply, r), next, options, message });
  };

  const step: SecondStep = async (request, reply, user, target, how = 'password') => {
    if (!(await mfa.hasFactor(user.id))) return undefined;
    const cookie = await mfa.startPending(user.id, how);
    setSignedCookie(reply, PENDING_COOKIE, cookie, pendingScope, MFA.pendingSeconds);
    return 'v' in target ? page(request, reply, { userId: user.id, cookie }, target.v.request, undefined) : page(request, reply, { userId: user.id, cookie }, undefined, target.next);
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
    if (!pages.csrfOk(request)) return formRefused(reply, 'Sign-in');
    const again = (message: string, status = 200) => (v ? pages.loginForm(request, reply, v.request, v.app.name, message, status) : account.login(request, reply, message, status));
    const cookie = readSignedCookie(request, PENDING_COOKIE);
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
        endPending(reply);
        return again('Too many wrong codes. Sign in again.', 429);
      }
      return page(request, reply, { userId, cookie }, v?.request, next, refusal, 400);
    }
    await mfa.endPending(cookie);
    endPending(reply);
    const user = await identity.user(userId);
    if (!user || user.blocked) return again('Your sign-in expired. Sign in again.');
    // The factor passed: in the session's methods (amr, RFC 8176) and the login event.
    const factor: FactorUsed = { factor: how, amr: passkey ? passkey.amr : 'otp' };
    const session = await identity.newSession(user.id, amrOf(pending!.auth_type === 'social' ? 'fed' : 'pwd', factor.amr));
    pages.setSession(reply, session);
    if (!v) return reply.redirect(NEXT[next!]!, 303);
    return complete()(request, reply, v, user, new Date(), pending!.auth_type, session, factor);
  });

  return step;
}
