// Logout (OpenID Connect RP-Initiated Logout), GET or POST /oauth/logout: with a valid
// id_token_hint at once, otherwise a signed-in browser is asked first (login-pages.tsx).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { problemResponses } from '../../platform/http/schemas.ts';
import type { IdentityService } from '../idp/idp.service.ts';
import { type LoginPages, formRefused, refusedPage, signedOutPage } from './pages.ts';

export async function logoutRoutes(app: FastifyInstance, { identity, pages }: { identity: IdentityService; pages: LoginPages }) {
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
    const refuse = (why: string) => refusedPage(reply, 'Sign-out request refused', why);
    const hintText = str('id_token_hint');
    const hint = hintText ? await identity.idTokenHint(hintText) : undefined;
    if (hintText && !hint) return refuse('The id_token_hint is not an ID token this provider issued.');
    let clientId = str('client_id');
    if (hint) {
      if (clientId && clientId !== hint.app.client_id) return refuse('client_id is not the audience of the id_token_hint.');
      clientId = hint.app.client_id;
    }
    const cookie = pages.session(request);
    const current = await identity.sessionUser(cookie);
    const proven = hint !== undefined && (!current || current.user.id === hint.sub);
    if (current && !proven) {
      const confirmed = request.method === 'POST' && body.confirm === '1';
      if (confirmed && !pages.csrfOk(request)) return formRefused(reply, 'Sign-out');
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
    return signedOutPage(reply, str('post_logout_redirect_uri'));
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
