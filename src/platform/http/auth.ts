// Authentication hook. A route declares what it accepts in its config:
//   config: { auth: { schemes: ['bearer', 'apiKey'], scope: 'payment-api' } }
// and the hook resolves the caller (a Principal) before the body is even parsed.
// Missing or bad credentials: 401 with WWW-Authenticate; valid but lacking scope: 403.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { problems } from './problem.ts';
import { safeEqual } from '../crypto/secrets.ts';

export type AuthScheme = 'bearer' | 'apiKey' | 'admin';

export interface AuthRequirement {
  schemes: AuthScheme[];
  /** Scope a bearer token must carry (API keys and the admin token carry every scope they can reach). */
  scope?: string;
}

export interface Principal {
  /** The merchant entity acting; absent for the operator. */
  entityId: string | undefined;
  scopes: string[];
  via: AuthScheme;
  apiKeyId?: string;
}

export interface Authenticators {
  /** Verifies an access token; throws InvalidCredentials when it is not valid. */
  bearer(token: string): Promise<Principal>;
  /** Resolves an API key; throws a 401 Problem when it is unknown or revoked. */
  apiKey(key: string): Promise<Principal>;
  /** The operator token, when the operator API is on. */
  adminToken: string | undefined;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: AuthRequirement;
  }
  interface FastifyRequest {
    principal?: Principal;
  }
}

export const API_KEY_HEADER = 'x-api-key';

/** Thrown by authenticators for credentials that are not valid; its message is shown to the caller. */
export class InvalidCredentials extends Error {
  override name = 'InvalidCredentials';
}

function challenge(schemes: AuthScheme[], error?: string, description?: string): string {
  const parts: string[] = [];
  for (const s of schemes) {
    if (s === 'bearer' || s === 'admin') {
      let c = `Bearer realm="${s === 'admin' ? 'payd-admin' : 'payd'}"`;
      if (error) c += `, error="${error}"`;
      if (description) c += `, error_description="${description.replace(/"/g, "'")}"`;
      parts.push(c);
    } else {
      parts.push(`ApiKey realm="payd", header="${API_KEY_HEADER}"`);
    }
  }
  return parts.join(', ');
}

async function authenticate(request: FastifyRequest, req: AuthRequirement, auth: Authenticators): Promise<Principal> {
  const authorization = request.headers.authorization;
  const apiKey = request.headers[API_KEY_HEADER];
  const bearer = authorization?.match(/^Bearer\s+(\S+)\s*$/i)?.[1];

  if (req.schemes.includes('admin')) {
    if (!auth.adminToken) throw problems.notFound('The operator API is disabled (PAYD_ADMIN_TOKEN is not set).');
    if (!bearer) throw problems.unauthorized('The operator token is missing.', challenge(['admin']));
    if (!safeEqual(bearer, auth.adminToken)) {
      throw problems.unauthorized('The operator token is not valid.', challenge(['admin'], 'invalid_token'));
    }
    return { entityId: undefined, scopes: ['admin'], via: 'admin' };
  }

  if (typeof apiKey === 'string' && req.schemes.includes('apiKey')) return auth.apiKey(apiKey);
  if (bearer && req.schemes.includes('bearer')) {
    const principal = await auth.bearer(bearer).catch((err: unknown) => {
      if (!(err instanceof InvalidCredentials)) throw err;
      throw problems.unauthorized(err.message, challenge(req.schemes, 'invalid_token', err.message));
    });
    if (req.scope && !principal.scopes.includes(req.scope)) {
      const p = problems.forbidden(`The access token lacks the scope "${req.scope}".`);
      p.headers['www-authenticate'] = challenge(['bearer'], 'insufficient_scope');
      throw p;
    }
    return principal;
  }
  if (bearer && !req.schemes.includes('bearer')) {
    throw problems.unauthorized(`This operation takes the API key in the ${API_KEY_HEADER} header, not a bearer token.`, challenge(req.schemes));
  }
  if (apiKey !== undefined && !req.schemes.includes('apiKey')) {
    throw problems.unauthorized('This operation takes a bearer access token, not an API key.', challenge(req.schemes));
  }
  const accepted = req.schemes.map((s) => (s === 'apiKey' ? `an API key in ${API_KEY_HEADER}` : 'a bearer access token'));
  throw problems.unauthorized(`Credentials are missing: send ${accepted.join(' or ')}.`, challenge(req.schemes));
}

export const authPlugin = fp<{ authenticators: Authenticators }>(async function authPlugin(app: FastifyInstance, { authenticators }) {
  app.decorateRequest('principal', undefined);
  // (A callback hook: a route without auth, most of the shopper's pages, costs no promise.)
  app.addHook('onRequest', (request, _reply, done) => {
    const req = request.routeOptions.config.auth;
    if (!req) return done();
    authenticate(request, req, authenticators).then((principal) => {
      request.principal = principal;
      done();
    }, done);
  });
});

/** The authenticated merchant entity of a request (routes that require merchant auth). */
export function entityOf(request: FastifyRequest): string {
  const id = request.principal?.entityId;
  if (!id) throw problems.forbidden('This operation needs merchant credentials.');
  return id;
}
