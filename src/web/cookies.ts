// The one cookie implementation: @fastify/cookie, registered once on the root instance
// with payd's cookie key (derived from the master key), so every route reads
// request.cookies and signs with reply.setCookie(name, value, { signed: true }).
import cookie from '@fastify/cookie';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

export const webCookies = fp(async (app: FastifyInstance, opts: { secret: Buffer }) => {
  await app.register(cookie, { secret: opts.secret.toString('base64url'), hook: 'onRequest' });
}, { name: 'payd-web-cookies' });

export interface CookieScope {
  /** The path the cookie is sent to (e.g. /dashboard). */
  path: string;
  /** Secure attribute: payd served over https. */
  secure: boolean;
  /** SameSite; Lax unless said (the identity provider's session cookie is None over https). */
  sameSite?: 'lax' | 'strict' | 'none';
}

/** Sets a cookie signed with payd's cookie key: HttpOnly, SameSite=Lax, on the scope's path; a session cookie unless maxAge (seconds). */
export function setSignedCookie(reply: FastifyReply, name: string, value: string, scope: CookieScope, maxAge?: number): void {
  reply.setCookie(name, value, { signed: true, httpOnly: true, sameSite: scope.sameSite ?? 'lax', path: scope.path, secure: scope.secure, ...(maxAge !== undefined ? { maxAge } : {}) });
}

/**
 * The request's cookies; none for a request refused before @fastify/cookie's onRequest hook
 * parsed them (the input guard refuses a bad header earlier, and the error handler still
 * picks the shopper's language).
 */
const cookiesOf = (request: FastifyRequest): Record<string, string | undefined> => request.cookies ?? {};

/** A signed cookie's value when its signature holds, else undefined. */
export function readSignedCookie(request: FastifyRequest, name: string): string | undefined {
  const raw = cookiesOf(request)[name];
  if (raw === undefined) return undefined;
  const u = request.unsignCookie(raw);
  return u.valid && u.value !== null ? u.value : undefined;
}

/**
 * Sets a plain cookie (not signed: a preference such as the shopper's language, never
 * trusted for access): HttpOnly, SameSite=Lax unless the scope says, on the scope's path,
 * kept maxAge seconds.
 */
export function setPlainCookie(reply: FastifyReply, name: string, value: string, scope: CookieScope, maxAge: number): void {
  reply.setCookie(name, value, { signed: false, httpOnly: true, sameSite: scope.sameSite ?? 'lax', path: scope.path, secure: scope.secure, maxAge });
}

/** A plain cookie's value (not signed: a hint, never trusted for access). */
export const readCookie = (request: FastifyRequest, name: string): string | undefined => cookiesOf(request)[name];

/** Ends a cookie of the scope. */
export function clearCookie(reply: FastifyReply, name: string, scope: CookieScope): void {
  reply.clearCookie(name, { path: scope.path, httpOnly: true, sameSite: scope.sameSite ?? 'lax', secure: scope.secure });
}
