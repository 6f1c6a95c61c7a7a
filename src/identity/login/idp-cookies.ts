// The identity provider's cookies on the web layer (src/web/cookies.ts: @fastify/cookie,
// signed with payd's cookie key) and its forms' CSRF token (src/web/csrf.tsx).
//
// - payd_idp_session: the sign-in session's token (the row is idp_sessions; the cookie is
//   signed, so a value payd did not set is no session). It goes to /oauth (authorize,
//   logout, account pages) and /identity (the SDK's sso/data and logout), never to the
//   payment API or the checkout. The identity SDK reads it cross-site (sso/data,
//   checkSession's hidden frame) when the shop is on another site: SameSite=None over
//   https (None needs Secure), Lax over http. A browser-session cookie, as before.
// - payd_idp_csrf: a random nonce (signed, HttpOnly, Lax, path /oauth, kept while valid so
//   that two open tabs both work). Every form of these pages carries the web layer's CSRF
//   token bound to it, so a form posted from elsewhere, or without the cookie, is refused;
//   nothing relies on the session cookie's SameSite. The login forms have no session yet,
//   which is why the token is bound to this cookie and not to the session's.
// - payd_idp_mfa (the second step's pending sign-in, mfa.ts) and payd_idp_federation (the
//   social login's state): short-lived signed cookies under /oauth.
import { randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type CookieScope, clearCookie, csrfToken, csrfValid, readSignedCookie, setSignedCookie } from '../../web/index.ts';

export const SESSION_COOKIE = 'payd_idp_session';
export const CSRF_COOKIE = 'payd_idp_csrf';
const SESSION_PATHS = ['/oauth', '/identity'] as const;
const NONCE = /^[A-Za-z0-9_-]{22}$/;

export interface IdpCookies {
  /** The sign-in session's token of the signed session cookie, if any. */
  session(request: FastifyRequest): string | undefined;
  setSession(reply: FastifyReply, token: string): void;
  clearSession(reply: FastifyReply): void;
  /** The CSRF token of this browser's nonce cookie (set now when it has none). */
  csrfToken(request: FastifyRequest, reply: FastifyReply): string;
  /** Whether the posted form's `csrf` field is the token of this browser's nonce cookie. */
  csrfOk(request: FastifyRequest): boolean;
  /** The scope of the short-lived cookies under `path` (the pending second step, the social login's state). */
  shortScope(path: string): CookieScope;
}

export function idpCookies(baseUrl: string, csrfKey: Buffer): IdpCookies {
  const secure = baseUrl.startsWith('https://');
  const sessionScope = (path: string): CookieScope => ({ path, secure, sameSite: secure ? 'none' : 'lax' });
  const csrfScope: CookieScope = { path: '/oauth', secure };
  const madeFor = new WeakMap<FastifyRequest, string>();
  const nonceOf = (request: FastifyRequest) => {
    const n = readSignedCookie(request, CSRF_COOKIE);
    return n && NONCE.test(n) ? n : undefined;
  };
  return {
    session: (request) => readSignedCookie(request, SESSION_COOKIE),
    setSession(reply, token) {
      for (const path of SESSION_PATHS) setSignedCookie(reply, SESSION_COOKIE, token, sessionScope(path));
    },
    clearSession(reply) {
      for (const path of SESSION_PATHS) clearCookie(reply, SESSION_COOKIE, sessionScope(path));
    },
    csrfToken(request, reply) {
      let nonce = nonceOf(request) ?? madeFor.get(request);
      if (!nonce) {
        nonce = randomBytes(16).toString('base64url');
        madeFor.set(request, nonce); // one nonce per answer, whatever the number of its forms
        setSignedCookie(reply, CSRF_COOKIE, nonce, csrfScope);
      }
      return csrfToken(csrfKey, nonce);
    },
    csrfOk: (request) => csrfValid(request, csrfKey, nonceOf(request)),
    shortScope: (path) => ({ path, secure }),
  };
}
