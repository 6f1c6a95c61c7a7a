// What the security page's routes share (security.routes.ts, security-passkeys.routes.ts,
// and the second step's way back to the page): the page with the user's current factors,
// its sign-in page, the signed-in user of a posted form (CSRF, session, the password
// again), and the rule that a required last factor stays.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { VNode } from 'preact';
import { isProblem, PROBLEM_TYPE } from '../../platform/http/problem.ts';
import { type IdentityService, THROTTLE, type UserRow } from '../idp/idp.service.ts';
import { type LoginPages, formRefused } from '../login/pages.ts';
import type { Mfa } from './mfa.ts';
import { PASSKEYS, type Passkeys } from './passkeys.ts';
import { securityLoginPage, securityPage } from './mfa-pages.tsx';

export interface SecurityDeps {
  identity: IdentityService;
  pages: LoginPages;
  mfa: Mfa;
  passkeys: Passkeys;
  consoleRequiresSecondFactor: boolean;
}

export function accountSecurity({ identity, pages, mfa, passkeys, consoleRequiresSecondFactor }: SecurityDeps) {
  const fields = (request: FastifyRequest, reply: FastifyReply) => () => pages.fields(request, reply);

  /** The security page's sign-in form. */
  const login = (request: FastifyRequest, reply: FastifyReply, message?: string, status = 200) =>
    securityLoginPage(reply, status, { fields: fields(request, reply), message });

  /** The security page of the user, with what a change shows (`extra`) or a message. */
  const page = async (request: FastifyRequest, reply: FastifyReply, user: UserRow, o: { extra?: VNode; message?: string; status?: number; passkeyScript?: boolean } = {}) => {
    const st = await mfa.status(user.id);
    const s = { user, totp: st.totp, recoveryLeft: st.recoveryLeft, passkeys: await passkeys.list(user.id) };
    return securityPage(reply, o.status ?? 200, { s, fields: fields(request, reply), extra: o.extra, message: o.message, passkeyScript: o.passkeyScript ?? false });
  };

  /** The signed-in user of a form of the security page, or the reply that refuses it. */
  const signedIn = async (request: FastifyRequest, reply: FastifyReply, body: Record<string, string>, needPassword: boolean): Promise<{ user: UserRow; reply?: undefined } | { user?: undefined; reply: FastifyReply }> => {
    if (!pages.csrfOk(request)) return { reply: formRefused(reply, 'Change') };
    const s = await identity.sessionUser(pages.session(request));
    if (!s) return { reply: login(request, reply, 'Sign in again.', 401) };
    if (needPassword) {
      try {
        await identity.login(s.user.email, body.password ?? '', request.ip);
      } catch (err) {
        if (isProblem(err, PROBLEM_TYPE.unauthorized, PROBLEM_TYPE.tooManyRequests)) {
          const throttled = err.type === PROBLEM_TYPE.tooManyRequests;
          if (throttled) reply.header('retry-after', String(THROTTLE.windowSeconds));
          return { reply: await page(request, reply, s.user, { message: throttled ? err.detail : 'The password is not right.', status: throttled ? 429 : 400 }) };
        }
        throw err;
      }
    }
    return { user: s.user };
  };

  /** Why the user's last second factor may not go (a merchant team or the console requires one); undefined when it may, or it is not the last. */
  const lastFactorKept = async (userId: string): Promise<string | undefined> => {
    if ((await mfa.factorCount(userId)) > 1) return undefined;
    const requiredBy = await identity.secondFactorRequiredBy(userId, consoleRequiresSecondFactor);
    return requiredBy ? `${requiredBy} requires a second factor, and it is your last one. Add another first, or ask an administrator there to change this.` : undefined;
  };

  return { login, page, signedIn, lastFactorKept };
}

export type AccountSecurity = ReturnType<typeof accountSecurity>;

/** A passkey's name as typed, or the message that names the field. */
export function passkeyName(raw: string | undefined): { name: string } | { error: string } {
  const name = (raw ?? '').trim().replace(/\s+/g, ' ');
  if (!name || name.length > PASSKEYS.nameMax) return { error: `name: give the passkey a name of 1 to ${PASSKEYS.nameMax} characters.` };
  return { name };
}
