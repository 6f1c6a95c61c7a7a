// Token introspection (RFC 7662), revocation (RFC 7009) and /userinfo, answered with
// OAuth errors (user-tokens.ts does the work; idp/idp.routes.ts assembles).
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { problemResponses } from '../../platform/http/schemas.ts';
import type { IdentityService } from '../idp/idp.service.ts';

export async function userTokenRoutes(root: FastifyInstance, { identity }: { identity: IdentityService }) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();

  const FORM = 'application/x-www-form-urlencoded';
  const tokenBody = Type.Object({
    token: Type.String({ minLength: 1, maxLength: 4096 }), token_type_hint: Type.Optional(Type.String({ maxLength: 50 })),
    client_id: Type.Optional(Type.String({ maxLength: 100 })), client_secret: Type.Optional(Type.String({ maxLength: 200 })),
  });
  const oauthErrors = { oauthErrors: () => true };
  app.post('/oauth/introspect', {
    config: oauthErrors,
    schema: {
      tags: ['Identity'], summary: 'Token introspection (RFC 7662)', consumes: [FORM],
      description: 'Client authentication as at the token endpoint. A client learns only about tokens issued to it; any other token is {"active": false}.',
      body: tokenBody, response: problemResponses(400, 401),
    },
  }, async (request, reply) => {
    reply.header('cache-control', 'no-store');
    return identity.introspect(request.headers, request.body);
  });
  app.post('/oauth/revoke', {
    config: oauthErrors,
    schema: {
      tags: ['Identity'], summary: 'Token revocation (RFC 7009)', consumes: [FORM, 'application/json'],
      description: 'Revokes an access token issued to the calling client. Answers 200 whatever the token, as RFC 7009 says.',
      body: tokenBody, response: problemResponses(400, 401),
    },
  }, async (request, reply) => {
    await identity.revoke(request.headers, request.body);
    // RFC 7009 allows any body; {} as JSON, because the identity SDK reads the answer with response.json().
    return reply.code(200).header('cache-control', 'no-store').send({});
  });

  const userinfo = async (request: { headers: { authorization?: string | undefined } }) => {
    const auth = request.headers.authorization;
    return identity.userinfo(auth?.startsWith('Bearer ') ? auth.slice(7) : undefined);
  };
  app.get('/userinfo', { config: oauthErrors, schema: { tags: ['Identity'], summary: 'Claims of the signed-in user', response: problemResponses(401) } }, userinfo);
  // OpenID Connect Core 5.3.1: the UserInfo endpoint takes POST too (the token still in the Authorization header).
  app.post('/userinfo', { config: oauthErrors, schema: { hide: true } }, userinfo);
}
