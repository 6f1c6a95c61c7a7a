// The one session format of payd's pages: a signed cookie (cookies.ts) holding
// `<subject>.<expiry, unix seconds>.<sid>`: who, until when, and the identity provider's
// sign-in session it lives by (the area checks that session is still alive). The raw
// cookie value is what CSRF tokens are bound to (csrf.ts).
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type CookieScope, clearCookie, readSignedCookie, setSignedCookie } from './cookies.ts';

export interface WebSession {
  sub: string;
  exp: number;
  sid: string;
  /** The signed cookie's value as sent (CSRF tokens are bound to it). */
  raw: string;
}

export interface SessionCookie extends CookieScope {
  name: string;
}

export function startSession(reply: FastifyReply, c: SessionCookie, s: { sub: string; sid: string; ttlSeconds: number; now?: number }): void {
  const exp = Math.floor((s.now ?? Date.now()) / 1000) + s.ttlSeconds;
  setSignedCookie(reply, c.name, `${s.sub}.${exp}.${s.sid}`, c);
}

/** The request's session when its signature holds and it has not expired. */
export function readSession(request: FastifyRequest, c: SessionCookie, now = Date.now()): WebSession | undefined {
  const value = readSignedCookie(request, c.name);
  if (!value) return undefined;
  const [sub, exp, sid, ...rest] = value.split('.');
  if (!sub || !exp || !sid || rest.length || !(Number(exp) > now / 1000)) return undefined;
  return { sub, exp: Number(exp), sid, raw: request.cookies[c.name]! };
}

export const endSession = (reply: FastifyReply, c: SessionCookie): void => clearCookie(reply, c.name, c);
