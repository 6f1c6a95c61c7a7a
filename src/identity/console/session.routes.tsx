// Who is signed in to the console: the session (src/web's signed session cookie, alive
// while the identity provider's sign-in session is), the sign-in through the provider
// itself (authorization code + PKCE, the built-in first-party public client payd-console),
// sign-out, and the forms' CSRF token bound to the session. Only users with is_admin get
// in (and, with PAYD_CONSOLE_REQUIRE_MFA, only a sign-in made with a second factor).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { csrfToken, csrfValid, endSession, readSession, startSession } from '../../web/index.ts';
import { firstPartySignIn } from '../idp/first-party-sign-in.ts';
import type { IdentityService } from '../idp/idp.service.ts';
import { hasSecondFactor } from '../mfa/amr.ts';
import { CONSOLE_CLIENT_ID, type ConsoleService, type UserRow } from './console.service.ts';
import { expired, consolePage, plainPage } from './layout.tsx';

const COOKIE = 'payd_console';
const TTL_SECONDS = 8 * 3600;

export interface Admin {
  user: UserRow;
  /** The CSRF token of the session's forms. */
  csrf: string;
  sid: string;
  /** The session cookie's value as sent (the CSRF token is bound to it). */
  raw: string;
}

export interface ConsoleAuth {
  /** The signed-in administrator; else the reply is sent (a redirect to sign in, or a 403 page) and undefined. */
  admin: (request: FastifyRequest, reply: FastifyReply) => Promise<Admin | undefined>;
  /** Whether the posted form carries the session's CSRF token. */
  csrfOk: (request: FastifyRequest, a: Admin) => boolean;
}

export interface ConsoleSessionDeps {
  identity: IdentityService;
  console: ConsoleService;
  consoleOrigin: string;
  /** The key of the console's CSRF tokens. */
  key: Buffer;
  requireSecondFactor: boolean;
}

export async function consoleSessionRoutes(app: FastifyInstance, deps: ConsoleSessionDeps): Promise<ConsoleAuth> {
  const callback = `${deps.consoleOrigin}/console/callback`;
  // Lax, not Strict: a link to the console from another site is a top-level GET whose
  // redirect chain stays cross-site, so a Strict cookie was never sent and every hop
  // signed in again (a redirect loop writing a login event per hop). GET pages change
  // nothing; every form carries the CSRF token, and Lax keeps the cookie off cross-site
  // POSTs anyway.
  const scope = { path: '/console', secure: deps.consoleOrigin.startsWith('https://'), sameSite: 'lax' as const };
  const session = { ...scope, name: COOKIE };
  const signIn = firstPartySignIn({ identity: deps.identity, clientId: CONSOLE_CLIENT_ID, callback, authorizeOrigin: deps.consoleOrigin, cookie: 'payd_console_login', scope });
  const failed = (reply: FastifyReply) => plainPage(reply, 400, 'Sign-in failed', <p role="alert">The console sign-in did not complete. <a href="/console">Try again</a>.</p>);

  const admin = async (request: FastifyRequest, reply: FastifyReply): Promise<Admin | undefined> => {
    const s = readSession(request, session);
    // The console session lives only as long as the provider's sign-in session it came
    // from: a sign-out at the provider, a password change or a block ends both.
    const alive = s ? await deps.identity.sessionAlive(s.sid, s.sub) : undefined;
    if (s && alive) {
      const user = await deps.console.user(s.sub);
      if (user?.is_admin && !user.blocked) {
        const csrf = csrfToken(deps.key, s.raw);
        if (deps.requireSecondFactor && !hasSecondFactor(alive.amr)) {
          // Signed in with a password only: the console asks for the second factor first.
          consolePage(reply, 403, { title: 'A second factor is required', email: user.email, csrf },
            <p role="alert">This console requires a second factor. <a href="/oauth/account/security">Add an authenticator app</a> to your account if you have none, then sign out and sign in again: the sign-in will ask for it.</p>);
          return undefined;
        }
        return { user, csrf, sid: s.sid, raw: s.raw };
      }
    }
    signIn.start(reply);
    return undefined;
  };

  app.post('/console/logout', { schema: { hide: true, body: Type.Record(Type.String(), Type.String({ maxLength: 1000 })) } }, async (request, reply) => {
    const s = readSession(request, session, 0); // the form of an expired session is still checked against it
    if (!s || !csrfValid(request, deps.key, s.raw)) return plainPage(reply, 403, 'Sign-out refused', expired());
    // Signing out of the console signs out of the provider: the sign-in session ends, so
    // the next visit asks for the password instead of signing in again silently.
    if (s.exp > Date.now() / 1000) await deps.identity.endSessionById(s.sid);
    endSession(reply, session);
    return plainPage(reply, 200, 'Signed out', <p>You are signed out of the console. <a href="/console">Sign in again</a>.</p>);
  });

  app.get('/console/callback', { schema: { hide: true } }, async (request, reply) => {
    const signed = await signIn.callback(request);
    if (!signed) return failed(reply);
    const { userId, sid } = signed;
    const user = await deps.console.user(userId);
    if (!user?.is_admin) return plainPage(reply, 403, 'Not an administrator', <p role="alert">Only administrators may use the console.</p>);
    if (!sid) return failed(reply);
    startSession(reply, session, { sub: userId, sid, ttlSeconds: TTL_SECONDS });
    signIn.done(reply);
    return reply.redirect('/console', 303);
  });

  return { admin, csrfOk: (request, a) => csrfValid(request, deps.key, a.raw) };
}
