// Client authentication of an identity application at the token, introspection and
// revocation endpoints: client_secret_basic (RFC 6749 2.3.1: the id and secret are
// form-urlencoded before base64), client_secret_post, or none for public clients.
import type { Queryable } from '../../platform/db/index.ts';
import { safeEqual, sha256 } from '../../platform/crypto/secrets.ts';
import { type AppRow, idpRepo } from '../idp/idp.repo.ts';
import { oauthError } from './oauth-errors.ts';

/** The client's id and secret as sent (Basic header or form), and how they came. */
export function clientCredentials(headers: Record<string, unknown>, body: Record<string, unknown>) {
  let id = typeof body.client_id === 'string' && body.client_id !== '' ? body.client_id : undefined;
  let secret = typeof body.client_secret === 'string' && body.client_secret !== '' ? body.client_secret : undefined;
  let via: AppRow['token_endpoint_auth_method'] = secret ? 'client_secret_post' : 'none';
  const auth = typeof headers.authorization === 'string' ? headers.authorization : undefined;
  if (auth && /^basic /i.test(auth)) {
    if (secret) throw oauthError('invalid_request', 'Send the client credentials once: in the Basic header or in the form, not both.');
    const decoded = Buffer.from(auth.slice(6).trim(), 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    let user: string;
    let pass: string;
    try {
      user = formDecode(colon < 0 ? decoded : decoded.slice(0, colon));
      pass = formDecode(colon < 0 ? '' : decoded.slice(colon + 1));
    } catch {
      throw oauthError('invalid_client', 'The Basic credentials are malformed.');
    }
    if (id && user !== id) throw oauthError('invalid_client', 'client_id differs from the Basic credentials.');
    id = user;
    secret = pass;
    via = 'client_secret_basic';
  }
  return { id, secret, via };
}

const formDecode = (s: string) => decodeURIComponent(s.replace(/\+/g, ' '));

/**
 * Authenticates the calling application with the method it registered
 * (token_endpoint_auth_method), and no other: a client_secret_basic client that sends
 * its secret in the form, a client_secret_post client that sends a Basic header, or a
 * public client (`none`) that sends any secret is refused (invalid_client), as a wrong
 * secret is. A public client sends only its client_id and must have used PKCE, which
 * the grant checks.
 */
export async function authenticateClient(db: Queryable, headers: Record<string, unknown>, body: Record<string, unknown>): Promise<AppRow> {
  const { id, secret, via } = clientCredentials(headers, body);
  const app = id ? await idpRepo.app(db, id) : undefined;
  if (!app) throw oauthError('invalid_client', 'Unknown client.');
  checkAuthMethod(app, via, secret);
  if (app.token_endpoint_auth_method === 'none') return app;
  if (!secret || !app.secret_hash || !safeEqual(sha256(secret).toString('hex'), app.secret_hash)) {
    throw oauthError('invalid_client', 'Client authentication failed.');
  }
  return app;
}

/** Refuses credentials sent another way than the application's registered method. */
export function checkAuthMethod(app: AppRow, via: AppRow['token_endpoint_auth_method'], secret: string | undefined): void {
  const registered = app.token_endpoint_auth_method;
  if (registered === 'none') {
    if (secret !== undefined || via !== 'none') throw oauthError('invalid_client', 'This public client (token_endpoint_auth_method none) has no secret: send only client_id.');
    return;
  }
  if (via !== registered) {
    throw oauthError('invalid_client', registered === 'client_secret_basic'
      ? 'This client is registered with client_secret_basic: send its credentials in the Authorization header (HTTP Basic), not in the form.'
      : 'This client is registered with client_secret_post: send client_id and client_secret in the form, not in an Authorization header.');
  }
}
