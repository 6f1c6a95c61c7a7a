// Consent for applications that are not first-party, and the signed-in user's page of the
// applications they allowed. After a sign-in (form, sign-up or the browser's session),
// `complete` issues the code when the user already granted every requested scope (or the
// application is first-party); otherwise it shows the consent page (prompt=none:
// error=consent_required). The page posts back here with the CSRF token: Allow remembers
// the scopes per (user, application) and issues the code; Deny redirects with
// error=access_denied. /oauth/account/applications lists the grants (under /oauth, the
// path of the session cookie); Revoke withdraws one and revokes that application's
// refresh and access tokens for the user.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { isProblem, PROBLEM_TYPE } from '../../platform/http/problem.ts';
import { type AppRow, type AuthRequest, AuthorizeError, type IdentityService } from '../idp/idp.service.ts';
import { type AuthType, type LoginPages, formRefused, refusedPage } from './pages.ts';
import type { FactorUsed, SecondStep } from '../mfa/mfa.routes.ts';
import { amrOf } from '../mfa/amr.ts';

const FormBody = Type.Record(Type.String(), Type.String({ maxLength: 2048 }));
const ACCOUNT_APPS = '/oauth/account/applications';

export type Complete = (
  request: FastifyRequest, reply: FastifyReply, v: { request: AuthRequest; app: AppRow }, user: { id: string; email: string }, authTime: Date, how: AuthType, session: string,
  factor?: FactorUsed, // issue 40: the second factor this sign-in passed (login event; amr)
) => Promise<FastifyReply>;

export async function consentRoutes(app: FastifyInstance, { identity, pages, secondStep }: { identity: IdentityService; pages: LoginPages; secondStep: SecondStep }): Promise<Complete> {
  const complete: Complete = async (request, reply, v, user, authTime, how, session, factor) => {
    const r = v.request;
    const missing = await identity.consentNeeded(v.app, user.id, r);
    if (missing.length === 0) return reply.redirect(await identity.issueCode(r, user.id, authTime, { authType: how, ...(factor ? { secondFactor: factor.factor } : {}) }, session), 303);
    if (r.prompt?.includes('none')) {
      return pages.errorPage(reply, new AuthorizeError('consent_required', 'The user has not allowed this application the requested scopes (prompt=none).', r.redirect_uri, r.state || undefined));
    }
    return pages.consentForm(request, reply, r, v.app.name, user.email, missing, how, session);
  };

  app.post('/oauth/authorize/consent', { schema: { hide: true, body: FormBody } }, async (request, reply) => {
    const body = request.body as Record<string, string>;
    let v;
    try {
      v = await identity.validate(body);
    } catch (err) {
      if (err instanceof AuthorizeError) return pages.errorPage(reply, err);
      throw err;
    }
    if (!pages.csrfOk(request)) return formRefused(reply, 'Consent');
    const r = v.request;
    if (body.decision === 'deny') {
      return pages.errorPage(reply, new AuthorizeError('access_denied', 'The user denied the request.', r.redirect_uri, r.state || undefined, r.response_type === 'messenger_code'));
    }
    if (body.decision !== 'allow') return refusedPage(reply, 'Consent refused', 'Choose Allow or Deny.');
    const cookie = pages.session(request);
    const session = await identity.sessionUser(cookie);
    // The sign-in session ended meanwhile (sign-out, block, expiry): sign in again.
    if (!session || !cookie) return pages.loginForm(request, reply, r, v.app.name, 'Your session ended. Sign in again.');
    if (!v.app.first_party) await identity.grantConsent(session.user.id, v.app.client_id, r.scope);
    return reply.redirect(await identity.issueCode(r, session.user.id, session.auth_time, { authType: pages.consentHow(body, cookie) }, cookie), 303);
  });

  app.get(ACCOUNT_APPS, { schema: { hide: true } }, async (request, reply) => {
    const session = await identity.sessionUser(pages.session(request));
    if (!session) return pages.accountLogin(request, reply);
    const message = (request.query as Record<string, unknown>).revoked === '1' ? 'Access revoked.' : undefined;
    return pages.accountApps(request, reply, session.user.email, await identity.consents(session.user.id), message);
  });

  app.post('/oauth/account/login', { schema: { hide: true, body: FormBody } }, async (request, reply) => {
    const body = request.body as Record<string, string>;
    if (!pages.csrfOk(request)) return formRefused(reply, 'Sign-in');
    try {
      const user = await identity.login(body.email ?? '', body.password ?? '', request.ip);
      const stepped = await secondStep(request, reply, user, { next: 'applications' });
      if (stepped) return stepped;
      pages.setSession(reply, await identity.newSession(user.id, amrOf('pwd')));
      return reply.redirect(ACCOUNT_APPS, 303);
    } catch (err) {
      if (isProblem(err, PROBLEM_TYPE.unauthorized, PROBLEM_TYPE.tooManyRequests)) {
        const throttled = err.type === PROBLEM_TYPE.tooManyRequests;
        if (throttled) reply.header('retry-after', err.headers?.['retry-after'] ?? '1');
        return pages.accountLogin(request, reply, err.detail, throttled ? 429 : 200);
      }
      throw err;
    }
  });

  app.post(`${ACCOUNT_APPS}/revoke`, { schema: { hide: true, body: FormBody } }, async (request, reply) => {
    const body = request.body as Record<string, string>;
    if (!pages.csrfOk(request)) return formRefused(reply, 'Revocation');
    const session = await identity.sessionUser(pages.session(request));
    if (!session) return pages.accountLogin(request, reply, 'Sign in again to revoke an application.', 401);
    if (!body.client_id) return refusedPage(reply, 'Revocation refused', 'No application named.');
    await identity.revokeConsent(session.user.id, body.client_id);
    return reply.redirect(`${ACCOUNT_APPS}?revoked=1`, 303);
  });

  return complete;
}
