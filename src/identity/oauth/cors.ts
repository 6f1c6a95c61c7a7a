// CORS of the endpoints a single-page application calls (discovery, JWKS, token,
// userinfo): an origin listed in any application's Allowed Origins gets
// Access-Control-Allow-Origin (and its preflight answered); any other origin gets no
// Access-Control-* header, so the browser refuses the response. No credentials mode:
// these endpoints do not use cookies.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Queryable } from '../../platform/db/index.ts';
import { problems } from '../../platform/http/problem.ts';
import { idpRepo } from '../idp/idp.repo.ts';

export const CORS_PATHS: readonly string[] = ['/.well-known/openid-configuration', '/.well-known/jwks.json', '/oauth/token', '/userinfo'];
const METHODS: Record<string, string> = { '/oauth/token': 'POST', '/userinfo': 'GET, POST' };
const MAX_AGE_SECONDS = 600;

async function allowed(db: Queryable, origin: string | undefined): Promise<boolean> {
  if (!origin || origin.length > 2048 || origin === 'null') return false;
  return idpRepo.originAllowed(db, origin);
}

const pathOf = (request: FastifyRequest) => request.url.split('?')[0]!;

export const identityCors = fp(async function identityCors(app: FastifyInstance, { db }: { db: Queryable }) {
  const paths = new Set(CORS_PATHS);
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    if (request.method === 'OPTIONS' || !paths.has(pathOf(request))) return;
    reply.header('vary', 'Origin');
    const origin = request.headers.origin;
    if (await allowed(db, origin)) {
      reply.header('access-control-allow-origin', origin!).header('access-control-expose-headers', 'WWW-Authenticate');
    }
  });
  for (const path of CORS_PATHS) {
    app.options(path, { schema: { hide: true } }, async (request, reply) => {
      reply.header('vary', 'Origin');
      const origin = request.headers.origin;
      if (!(await allowed(db, origin))) throw problems.forbidden('This origin is not an Allowed Origin of any application.');
      return reply.code(204)
        .header('access-control-allow-origin', origin!)
        .header('access-control-allow-methods', METHODS[path] ?? 'GET')
        .header('access-control-allow-headers', 'Authorization, Content-Type, DPoP')
        .header('access-control-max-age', String(MAX_AGE_SECONDS))
        .send();
    });
  }
});
