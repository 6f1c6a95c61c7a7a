// The hosted login: the sign-in form's post (CSRF, throttle, Cancel), sign-up, and
// logout (OpenID Connect RP-Initiated Logout). GET /oauth/authorize renders the form
// (idp.routes.ts); each post carries the authorization request again and is validated
// again, so nothing of it is kept on the server between the two.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { isProblem, PROBLEM_TYPE } from '../../platform/http/problem.ts';
import { problemResponses } from '../../platform/http/schemas.ts';
import { escapeHtml, sendPage } from '../../checkout/pages.ts';
import { AuthorizeError, type IdentityService, THROTTLE } from '../idp/idp.service.ts';
import { type LoginPages, SESSION_COOKIE, cookies, validatedRequest } from './pages.ts';
import { passwordProblem } from '../idp/password-policy.ts';
import { type SignUps, authorizeUrl } from '../idp/signup.ts';
import type { Complete } from './consent.routes.ts';
import type { SecondStep } from '../mfa/mfa.routes.ts';
import { amrOf } from '../mfa/amr.ts';

const FormBody = Type.Record(Type.String(), Type.String({ maxLength: 2048 }));

export async function loginRoutes(app: FastifyInstance, { identity, pages, complete, signups, baseUrl, secondStep }: {
  identity: IdentityService; pages: LoginPages; complete: Complete; signups: SignUps; baseUrl: string; secondStep: SecondStep;
}) {
  const validated = (reply: FastifyReply, fields: Record<string, unknown>) => validatedRequest(identity, pages, reply, fields);
  const csrfRefused = (reply: FastifyReply, what: string) =>
    sendPage(reply, 403, `${what} refused`, '<p role="alert">The form expired or did not come from this site. Go back and try again.</p>');

  app.post('/oauth/authorize/login', { schema: { hide: true, body: FormBody } }, async (request, reply) => {
    const body = request.body as Record<string, string>;
    const v = await validated(reply, body);
    if (!v) return reply;
    if (!pages.csrfOk(request, body)) return csrfRefused(reply, 'Sign-in');
    const r = v.request;
    if (body.cancel) {
      return pages.errorPage(reply, new AuthorizeError('access_denied', 'The user cancelled the sign-in.', r.redirect_uri, r.state || undefined, r.response_type === 'messenger_code'));
    }
    try {
      const user = await identity.login(body.email ?? '', body.password ?? '', request.ip);
      const stepped = await secondStep(request, reply, user, { v }); // a second factor: asked before any session
      if (stepped) return stepped;
      const session = await identity.newSession(user.id, amrOf('pwd'));
      pages.setSession(reply, session);
      return await complete(request, reply, v, user, new Date(), 'password', session);
    } catch (err) {
      if (isProblem(err, PROBLEM_TYPE.unauthorized, PROBLEM_TYPE.tooManyRequests)) {
        const throttled = err.type === PROBLEM_TYPE.tooManyRequests;
        if (throttled) reply.header('retry-after', err.headers?.['retry-after'] ?? '1');
        return pages.loginForm(request, reply, r, v.app.name, err.detail, throttled ? 429 : 200);
      }
      throw err;
    }
  });

  app.get('/oauth/authorize/signup', { schema: { hide: true } }, async (request, reply) => {
    const v = await validated(reply, request.query as Record<string, unknown>);
    return v ? pages.signupForm(request, reply, v.request, v.app.name) : reply;
  });

  app.post('/oauth/authorize/signup', { schema: { hide: true, body: FormBody } }, async (request, reply) => {
    const body = request.body as Record<string, string>;
    const v = await validated(reply, body);
    if (!v) return reply;
    if (!pages.csrfOk(request, body)) return csrfRefused(reply, 'Sign-up');
    const again = (message: string) => pages.signupForm(request, reply, v.request, v.app.name, message, 400);
    const email = (body.email ?? '').trim();
    const password = body.password ?? '';
    if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email) || email.length > 254) return again('Enter a valid email address.');
    const name = (k: string) => (body[k] ? body[k]!.slice(0, 100) : undefined);
    // The same page whether the address has an account or not (signup.ts): a mail follows.
    try {
      await signups.request({
        email, password, given_name: name('given_name'), family_name: name('family_name'), client_id: v.app.client_id, app_name: v.app.name,
        return_to: authorizeUrl(baseUrl, v.request),
      }, request.ip);
    } catch (err) {
      const weak = passwordProblem(err); // the password rule (password-policy.ts)
      if (weak) return again(weak);
      if (isProblem(err, PROBLEM_TYPE.tooManyRequests)) {
        reply.header('retry-after', String(THROTTLE.windowSeconds));
        return pages.signupForm(request, reply, v.request, v.app.name, err.detail, 429);
      }
      throw err;
    }
    return sendPage(reply, 200, 'Check your mail', `<div class="card-box"><p role="status">Check your mail: we sent a message to ${escapeHtml(email)}.</p>
<p>If you are new here, it has a link that creates your account (valid 24 hours). If you already have an account, sign in instead.</p></div>`);
  });

  /**
   * RP-Initiated Logout. A valid id_token_hint (signature and issuer checked, expiry not)
   * proves the request comes from its relying party and names the client (client_id is
   * then optional and must agree). Without one, a browser that has a session is asked
   * first: a page whose form posts back with the CSRF token, so that another site cannot
   * sign the user out with a link. A hint that is not valid is refused.
   */
  const logout = async (request: FastifyRequest, reply: FastifyReply) => {
    const body = (request.body ?? {}) as Record<string, string>;
    const q = { ...(request.query as Record<string, unknown>), ...body };
    const str = (k: string) => (typeof q[k] === 'string' && q[k] !== '' ? (q[k] as string) : undefined);
    const refuse = (why: string) => sendPage(reply, 400, 'Sign-out request refused', `<p role="alert">${escapeHtml(why)}</p>`);
    const hintText = str('id_token_hint');
    const hint = hintText ? await identity.idTokenHint(hintText) : undefined;
    if (hintText && !hint) return refuse('The id_token_hint is not an ID token this provider issued.');
    let clientId = str('client_id');
    if (hint) {
      if (clientId && clientId !== hint.app.client_id) return refuse('client_id is not the audience of the id_token_hint.');
      clientId = hint.app.client_id;
    }
    const cookie = cookies(request)[SESSION_COOKIE];
    const current = await identity.sessionUser(cookie);
    const proven = hint !== undefined && (!current || current.user.id === hint.sub);
    if (current && !proven) {
      const confirmed = request.method === 'POST' && body.confirm === '1';
      if (confirmed && !pages.csrfOk(request, body)) return csrfRefused(reply, 'Sign-out');
      if (!confirmed) {
        return pages.logoutConfirm(request, reply, { client_id: clientId, post_logout_redirect_uri: str('post_logout_redirect_uri'), state: str('state') });
      }
    }
    await identity.endSession(cookie);
    // The hint's sid names the sign-in session the relying party's tokens came from: it ends
    // too, also when this browser sends no cookie (blocked as a third-party cookie, another browser).
    if (hint?.sid) await identity.endSessionOf(hint.sid, hint.sub);
    pages.clearSession(reply);
    const next = await identity.logoutRedirect(clientId, str('post_logout_redirect_uri'), str('state'));
    if (next) return reply.redirect(next, 303);
    const refused = str('post_logout_redirect_uri')
      ? `<p>payd did not send you back to ${escapeHtml(str('post_logout_redirect_uri')!)}: it is not an Allowed Callback URL of the application.</p>`
      : '';
    return sendPage(reply, 200, 'You are signed out', `<p role="status">You are signed out.</p>${refused}`);
  };
  const logoutSchema = {
    tags: ['Identity'], summary: 'Log out (OpenID Connect RP-Initiated Logout)',
    response: problemResponses(400),
    description: 'Ends the login session of the browser (cookie payd_idp_session). With a valid id_token_hint (which names the client; ' +
      'client_id is then optional) the session ends at once; without one, a signed-in browser is asked to confirm (a form posted back). ' +
      "With post_logout_redirect_uri equal to one of the client's Allowed Callback URLs, redirects there (303) with state; otherwise shows a signed-out page.",
    querystring: Type.Object({
      id_token_hint: Type.Optional(Type.String({ maxLength: 8192 })),
      client_id: Type.Optional(Type.String({ maxLength: 100 })), post_logout_redirect_uri: Type.Optional(Type.String({ maxLength: 2048 })),
      state: Type.Optional(Type.String({ maxLength: 512 })),
    }),
  };
  app.get('/oauth/logout', { schema: logoutSchema }, logout);
  app.post('/oauth/logout', { schema: { hide: true, body: Type.Record(Type.String(), Type.String({ maxLength: 8192 })) } }, logout);
}
