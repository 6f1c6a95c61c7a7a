// Who is signed in to the dashboard, and of which merchant they are a member: the session
// (src/web's signed session cookie, alive while the identity provider's sign-in session
// is), the sign-in through the provider (authorization code + PKCE, the built-in
// first-party application payd-dashboard), sign-out, and the forms' CSRF token bound to
// the session. Every page is authorised by the membership of the entity in its URL
// (access.tsx; not a member: 404).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { ReadRouter } from '../platform/db/reads.ts';
import type { IdentityService } from '../identity/idp/idp.service.ts';
import { firstPartySignIn } from '../identity/idp/first-party-sign-in.ts';
import { csrfToken, csrfValid, endSession, readCookie, readSession, setPlainCookie, startSession } from '../web/index.ts';
import { plain } from './views.ts';
import type { DashboardService } from './dashboard.service.ts';
import { type DashboardAuth, type Signed, entityAccess } from './access.tsx';
import { SignInFailed, SignOutRefused, SignedOut } from './auth-pages.tsx';

export const DASHBOARD_CLIENT_ID = 'payd-dashboard';
const TTL_SECONDS = 8 * 3600;
/** Set by a post of the dashboard: its pages read the primary while it lasts (a user sees their own change). */
const FRESH_COOKIE = 'payd_dashboard_fresh';

export type { DashboardAuth, Member, Signed } from './access.tsx';

export async function dashboardAuthRoutes(app: FastifyInstance, deps: { dashboard: DashboardService; reads: ReadRouter; identity: IdentityService; origin: string; idpOrigin: string; key: Buffer }): Promise<DashboardAuth> {
  const callback = `${deps.origin}/dashboard/callback`;
  await deps.dashboard.ensureApplication(DASHBOARD_CLIENT_ID, callback, deps.origin, 'payd dashboard');
  const scope = { path: '/dashboard', secure: deps.origin.startsWith('https://') };
  const session = { ...scope, name: 'payd_dashboard' };
  const signIn = firstPartySignIn({ identity: deps.identity, clientId: DASHBOARD_CLIENT_ID, callback, authorizeOrigin: deps.idpOrigin, cookie: 'payd_dashboard_login', scope });

  // Pages read their lists and figures from the read replica when it is no staler than
  // PAYD_READ_MAX_LAG_MS, except in answer to a post and for a while after one: whoever
  // just changed something sees it (the replica holds every commit older than the allowed
  // lag, so the cookie needs to outlive that lag only).
  const staleOk = (request: FastifyRequest) =>
    request.method === 'GET' && readCookie(request, FRESH_COOKIE) === undefined ? deps.reads.defaultMaxLagMs : 0;
  if (deps.reads.enabled) {
    const freshSeconds = Math.ceil(deps.reads.defaultMaxLagMs / 1000) + 1;
    // onSend: whether the post succeeded is known only once its answer is made. This hook
    // runs after @fastify/cookie's (registered on the root before the dashboard), so the
    // cookie set here is written at once, after those the handler set.
    app.addHook('onSend', async (request, reply, payload) => {
      if (request.method === 'POST' && reply.statusCode < 400) setPlainCookie(reply, FRESH_COOKIE, '1', scope, freshSeconds);
      return payload;
    });
  }

  const signedIn = async (request: FastifyRequest, reply: FastifyReply): Promise<Signed | undefined> => {
    const s = readSession(request, session);
    const alive = s ? await deps.identity.sessionAlive(s.sid, s.sub) : undefined;
    if (s && alive) {
      const user = await deps.dashboard.activeUser(s.sub);
      if (user) return { userId: s.sub, email: user.email, sid: s.sid, csrf: csrfToken(deps.key, s.raw), raw: s.raw, memberships: user.memberships, amr: alive.amr };
    }
    const back = request.method === 'GET' && request.url.startsWith('/dashboard') && request.url.length < 1000 ? request.url : '/dashboard';
    signIn.start(reply, back);
    return undefined;
  };

  const { member, csrfOk } = entityAccess(signedIn, deps.idpOrigin, deps.key);

  app.get('/dashboard/callback', { schema: { hide: true } }, async (request, reply) => {
    const signed = await signIn.callback(request);
    if (!signed?.sid) return plain(reply, 400, 'Sign-in failed', SignInFailed());
    const { userId, sid } = signed;
    // Invitations whose link this user redeemed start now (team.service.ts, invite).
    await deps.dashboard.acceptRedeemed(userId);
    const b = signed.back ?? '';
    const target = b.startsWith('/dashboard') && !b.startsWith('//') ? b : '/dashboard';
    startSession(reply, session, { sub: userId, sid, ttlSeconds: TTL_SECONDS });
    signIn.done(reply);
    return reply.redirect(target, 303);
  });

  app.post('/dashboard/logout', { schema: { hide: true, body: Type.Record(Type.String(), Type.String({ maxLength: 1000 })) } }, async (request, reply) => {
    const s = readSession(request, session, 0); // an expired session can still be signed out of
    if (!s || !csrfValid(request, deps.key, s.raw)) {
      return plain(reply, 403, 'Sign-out refused', SignOutRefused());
    }
    await deps.identity.endSessionById(s.sid);
    endSession(reply, session);
    return plain(reply, 200, 'Signed out', SignedOut());
  });

  return { member, signedIn, csrfOk, staleOk };
}
