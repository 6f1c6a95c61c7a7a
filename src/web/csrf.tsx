// The one CSRF protection of payd's pages: a token bound to the session cookie, an HMAC
// of it under the area's key (OWASP's "signed double-submit cookie", bound to the session).
// Every form that changes something carries it as the hidden field `csrf`; the route
// checks it before acting. Stateless: nothing stored, no second cookie, valid as long as
// the session cookie it is bound to.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { VNode } from 'preact';

export const CSRF_FIELD = 'csrf';

/** The token of a session (its cookie's raw value) under the area's key. */
export const csrfToken = (key: Buffer, boundTo: string): string =>
  createHmac('sha256', key).update(`csrf.${boundTo}`).digest('base64url');

/** Whether the posted form's `csrf` field is the session's token. */
export function csrfValid(request: FastifyRequest, key: Buffer, boundTo: string | undefined): boolean {
  const given = (request.body as Record<string, unknown> | undefined)?.[CSRF_FIELD];
  if (!boundTo || typeof given !== 'string') return false;
  const a = Buffer.from(given);
  const b = Buffer.from(csrfToken(key, boundTo));
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The hidden field of a form. */
export const CsrfField = ({ token }: { token: string }): VNode => <input type="hidden" name={CSRF_FIELD} value={token} />;
