// The hosted login: the sign-in form's post (CSRF, throttle, Cancel) and sign-up; logout
// is logout.routes.ts. GET /oauth/authorize renders the form (idp.routes.ts); each post
// carries the authorization request again and is validated again, so nothing of it is
// kept on the server between the two. Pages: login-pages.tsx.
import type { FastifyInstance, FastifyReply } from 'fastify';
import { Type } from 'typebox';
import { isProblem, PROBLEM_TYPE } from '../../platform/http/problem.ts';
import { AuthorizeError, type IdentityService, THROTTLE } from '../idp/idp.service.ts';
import { type LoginPages, checkMailPage, formRefused, validatedRequest } from './pages.ts';
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

  app.post('/oauth/authorize/login', { schema: { hide: true, body: FormBody } }, async (request, reply) => {
    const body = request.body as Record<string, string>;
    const v = await validated(reply, body);
    if (!v) return reply;
    if (!pages.csrfOk(request)) return formRefused(reply, 'Sign-in');
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
    if (!pages.csrfOk(request)) return formRefused(reply, 'Sign-up');
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
    return checkMailPage(reply, email);
  });
}
