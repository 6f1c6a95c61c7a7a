// GET and POST /oauth/authorize (OpenID Connect Core 3.1.2.1: the same request as a query
// or a form): a signed-in browser gets its code (after consent when needed), the identity
// SDK's one-time login token starts a sign-in session, response_mode=web_message answers
// the parent window (the SDK's silent authentication), and anyone else gets the hosted
// sign-in page. Errors go to the redirect URI when it is known, else to an error page.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AuthorizeError, type IdentityService } from '../idp/idp.service.ts';
import type { LoginPages } from './pages.ts';
import type { Complete } from './consent.routes.ts';
import type { SecondStep } from '../mfa/mfa.routes.ts';
import type { Mfa } from '../mfa/mfa.ts';
import { amrOf } from '../mfa/amr.ts';
import type { Federation } from '../federation/federation.ts';
import { webMessageReply } from '../sdk/web-message.ts';

export interface AuthorizeDeps {
  identity: IdentityService;
  pages: LoginPages;
  mfa: Mfa;
  secondStep: SecondStep;
  complete: Complete;
  federation: Federation;
}

export async function authorizeRoutes(app: FastifyInstance, { identity, pages, mfa, secondStep, complete, federation }: AuthorizeDeps) {
  // OpenID Connect Core 3.1.2.1: GET (query) and POST (form-encoded body), the same request.
  const authorize = async (request: FastifyRequest, reply: FastifyReply, q: Record<string, unknown>) => {
    // response_mode=web_message (the identity SDK's silent authentication): the answer,
    // code or error, is posted to the parent window of the redirect URI's origin, not redirected.
    const webMessage = q.response_mode === 'web_message';
    const refuse = async (err: AuthorizeError) => {
      if (webMessage && err.redirectUri) {
        return webMessageReply(reply, new URL(err.redirectUri).origin, { error: err.error, error_description: err.description, ...(err.state ? { state: err.state } : {}) });
      }
      // No usable redirect_uri (the SDK sends none for a confidential application, which it
      // turns to response_type=token): the error goes to the application's registered
      // origins only, so that checkSession rejects instead of waiting for ever.
      const known = webMessage && typeof q.client_id === 'string' && q.client_id.length <= 100 ? await identity.application(q.client_id) : undefined;
      if (known) {
        const origins = [...known.allowed_origins, ...known.callback_urls].flatMap((u) => { try { return [new URL(u).origin]; } catch { return []; } }).filter((o) => o !== 'null');
        const implicit = q.response_type !== undefined && q.response_type !== 'code';
        if (origins.length) {
          return webMessageReply(reply, origins, implicit
            ? { error: 'unsupported_response_type', error_description: 'response_type must be code: payd does not serve tokens in the browser (implicit flow). For checkSession use a public application (PKCE).' }
            : { error: err.error, error_description: err.description });
        }
      }
      return pages.errorPage(reply, err);
    };
    let validated;
    try {
      validated = await identity.validate(q);
      if (q.response_mode !== undefined && q.response_mode !== 'query' && !webMessage) {
        throw new AuthorizeError('invalid_request', 'response_mode may be query or web_message.', validated.request.redirect_uri, validated.request.state || undefined);
      }
    } catch (err) {
      if (err instanceof AuthorizeError) return refuse(err);
      throw err;
    }
    const r = validated.request;
    const answer = (location: string) => (webMessage
      ? webMessageReply(reply, new URL(r.redirect_uri).origin, Object.fromEntries(new URL(location).searchParams))
      : reply.redirect(location, 303));
    // tkn: the one-time token of a password login or sign-up just made through the
    // identity SDK (/identity/v1/password/login, /signup): the sign-in session starts here.
    if (typeof q.tkn === 'string' && q.tkn !== '') {
      const t = await identity.consumeLoginToken(q.tkn, r.client_id);
      if (!t) {
        return refuse(new AuthorizeError('access_denied', 'The authentication token (tkn) is not valid: it expired, was used, or was issued to another application.',
          r.redirect_uri, r.state || undefined, r.response_type === 'messenger_code'));
      }
      // A user with a second factor: the SDK's password login proved the password only.
      if (await mfa.hasFactor(t.user_id)) {
        if (webMessage) return refuse(new AuthorizeError('interaction_required', 'The user has a second factor: sign in on the hosted page.', r.redirect_uri, r.state || undefined));
        return (await secondStep(request, reply, { id: t.user_id }, { v: validated }))!;
      }
      const session = await identity.newSession(t.user_id, amrOf('pwd'));
      pages.setSession(reply, session);
      const user = (await identity.user(t.user_id))!;
      if (!webMessage) return complete(request, reply, validated, user, t.auth_time, t.auth_type, session);
      if ((await identity.consentNeeded(validated.app, user.id, r)).length) return refuse(consentRequired(r));
      return answer(await identity.issueCode(r, t.user_id, t.auth_time, { authType: t.auth_type }, session));
    }
    const sessionCookie = pages.session(request);
    const session = await identity.sessionUser(sessionCookie);
    // A session counts unless prompt=login asks for a new sign-in, or it is older than max_age.
    const fresh = session && !r.prompt?.includes('login')
      && (r.max_age === undefined || Date.now() - session.auth_time.getTime() <= r.max_age * 1000);
    // A signed-in browser gets its code, after the consent page when the application is not
    // first-party and lacks a grant (web_message: a hidden frame shows no page, so consent_required).
    if (fresh && !webMessage) return complete(request, reply, validated, session.user, session.auth_time, 'sso', sessionCookie!);
    if (fresh) {
      if ((await identity.consentNeeded(validated.app, session.user.id, r)).length) return refuse(consentRequired(r));
      return answer(await identity.issueCode(r, session.user.id, session.auth_time, { authType: 'sso' }, sessionCookie));
    }
    if (r.prompt?.includes('none') || webMessage) {
      return refuse(new AuthorizeError('login_required', 'The user is not signed in (prompt=none).', r.redirect_uri, r.state || undefined));
    }
    return pages.loginForm(request, reply, r, validated.app.name, undefined, 200, await federation.providers());
  };
  app.get('/oauth/authorize', { schema: { hide: true } }, (request, reply) => authorize(request, reply, (request.query ?? {}) as Record<string, unknown>));
  app.post('/oauth/authorize', { schema: { hide: true } }, (request, reply) => {
    const type = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (type !== 'application/x-www-form-urlencoded' || typeof request.body !== 'object' || request.body === null) {
      return pages.errorPage(reply, new AuthorizeError('invalid_request', 'A POST authorization request must be sent as application/x-www-form-urlencoded.'));
    }
    return authorize(request, reply, request.body as Record<string, unknown>);
  });
}

const consentRequired = (r: { redirect_uri: string; state: string }) =>
  new AuthorizeError('consent_required', 'The user has not allowed this application the requested scopes (prompt=none).', r.redirect_uri, r.state || undefined);
