// GET /v2/signing-jwks: public keys that verify service-redirection-data tokens.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { problemResponses } from '../platform/http/schemas.ts';
import type { RedirectionTokens } from './redirection-token.ts';

export const Jwk = Type.Object(
  {
    kty: Type.String({ description: 'Key type: RSA' }),
    e: Type.String({ description: 'RSA public exponent, base64url' }),
    n: Type.String({ description: 'RSA modulus, base64url' }),
    kid: Type.String({ description: 'Key id (RFC 7638 thumbprint); the kid of a token header names its key' }),
    alg: Type.String({ description: 'RS256' }),
    use: Type.String({ description: 'sig' }),
  },
  { $id: 'JwksKey' },
);

export async function signingJwksRoutes(root: FastifyInstance, { redirection }: { redirection: RedirectionTokens }) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  app.get('/v2/signing-jwks', {
    config: { auth: { schemes: ['apiKey'] } },
    schema: {
      tags: ['Signing keys'],
      summary: 'Public keys that verify service-redirection-data tokens',
      description:
        'A JWKS. The newest key signs; a rotated key stays listed for 30 days so that tokens it signed still verify. ' +
        'Cache it and refetch when a token names an unknown kid.',
      security: [{ apiKey: [] }],
      response: { 200: Type.Object({ keys: Type.Array(Type.Ref('JwksKey')) }), ...problemResponses(400, 401) },
    },
  }, async (_request, reply) => {
    reply.header('cache-control', 'private, max-age=300');
    return redirection.jwks();
  });
}
