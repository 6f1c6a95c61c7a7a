// CORS of the endpoints a single-page application calls (discovery, JWKS, token,
// userinfo): an origin listed in any application's Allowed Origins gets
// Access-Control-Allow-Origin (and its preflight answered); any other origin gets no
// Access-Control-* header, so the browser refuses the response. Discovery, JWKS and
// /userinfo without credentials; token and revocation with them (CREDENTIALED, below). The
// identity SDK's API (/identity/v1/*) too, with credentials: the SDK sends its calls with the browser's
// cookies (sso/data reads the sign-in session), which the browser allows only with
// Access-Control-Allow-Credentials and the exact origin (never '*').
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import fp from 'fastify-plugin';
import type { Queryable } from '../../platform/db/index.ts';
import { problems } from '../../platform/http/problem.ts';
import { idpRepo } from '../idp/idp.repo.ts';

export const CORS_PATHS: readonly string[] = ['/.well-known/openid-configuration', '/.well-known/jwks.json', '/oauth/token', '/oauth/revoke', '/userinfo'];
const METHODS: Record<string, string> = { '/oauth/token': 'POST', '/oauth/revoke': 'POST', '/userinfo': 'GET, POST' };
const MAX_AGE_SECONDS = 600;
/**
 * Paths answered with Access-Control-Allow-Credentials (besides /identity/v1/*): the token
 * and revocation endpoints, only because the identity SDK calls them with
 * credentials: 'include' (its remote setting sso: true) and the browser would refuse the
 * answer otherwise. Neither reads a cookie, so the credentials add nothing to what an
 * Allowed Origin can do there. Discovery, JWKS and /userinfo are not credentialed.
 */
const CREDENTIALED: ReadonlySet<string> = new Set(['/oauth/token', '/oauth/revoke']);

async function allowed(db: Queryable, origin: string | undefined): Promise<boolean> {
  if (!origin || origin.length > 2048 || origin === 'null') return false;
  return idpRepo.originAllowed(db, origin);
}

const pathOf = (request: FastifyRequest) => {
  const q = request.url.indexOf('?');
  return q < 0 ? request.url : request.url.slice(0, q);
};
export const SDK_PREFIX = '/identity/v1/';
const ALLOW_HEADERS = 'Authorization, Content-Type, DPoP, Accept-Language, Custom-Locale, X-R5-Correlation-Id';

export const identityCors = fp(async function identityCors(app: FastifyInstance, { db }: { db: Queryable }) {
  const paths = new Set(CORS_PATHS);
  // (A callback hook: every other path passes without a promise.)
  app.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
    const path = pathOf(request);
    if (request.method === 'OPTIONS' || !(paths.has(path) || path.startsWith(SDK_PREFIX))) return done();
    reply.header('vary', 'Origin');
    const origin = request.headers.origin;
    allowed(db, origin).then((ok) => {
      if (ok) {
        reply.header('access-control-allow-origin', origin!).header('access-control-expose-headers', 'WWW-Authenticate, Retry-After');
        if (CREDENTIALED.has(path) || path.startsWith(SDK_PREFIX)) reply.header('access-control-allow-credentials', 'true');
      }
      done();
    }, done);
  });
  app.options(`${SDK_PREFIX}*`, { schema: { hide: true } }, async (request, reply) => {
    reply.header('vary', 'Origin');
    const origin = request.headers.origin;
    if (!(await allowed(db, origin))) throw problems.forbidden('This origin is not an Allowed Origin of any application.');
    return reply.code(204)
      .header('access-control-allow-origin', origin!)
      .header('access-control-allow-credentials', 'true')
      .header('access-control-allow-methods', 'GET, POST')
      .header('access-control-allow-headers', ALLOW_HEADERS)
      .header('access-control-max-age', String(MAX_AGE_SECONDS))
      .send();
  });
  for (const path of CORS_PATHS) {
    app.options(path, { schema: { hide: true } }, async (request, reply) => {
      reply.header('vary', 'Origin');
      const origin = request.headers.origin;
      if (!(await allowed(db, origin))) throw problems.forbidden('This origin is not an Allowed Origin of any application.');
      if (CREDENTIALED.has(path)) reply.header('access-control-allow-credentials', 'true');
      return reply.code(204)
        .header('access-control-allow-origin', origin!)
        .header('access-control-allow-methods', METHODS[path] ?? 'GET')
        .header('access-control-allow-headers', ALLOW_HEADERS)
        .header('access-control-max-age', String(MAX_AGE_SECONDS))
        .send();
    });
  }
});
