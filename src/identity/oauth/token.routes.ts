// POST /oauth/token: one endpoint, dispatched on grant_type (one file per grant).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { type Static, Type } from 'typebox';
import { problemResponses } from '../../platform/http/schemas.ts';
import type { AccessTokens } from './access-tokens.ts';
import { type ApiKeyResolver, type TokenRequest, clientCredentialsGrant } from './grants/client-credentials.ts';
import { BASIC_CHALLENGE, oauthError } from './oauth-errors.ts';
import { invalidParamsFrom } from '../../platform/http/error-handler.ts';
import { API_KEY_HEADER } from '../../platform/http/auth.ts';

/** A grant handler: validates the form and the client, returns the token response body. */
export type GrantHandler = (req: TokenRequest) => Promise<TokenResponseT>;

export interface TokenDeps {
  apiKeys: ApiKeyResolver;
  tokens: AccessTokens;
  /** Further grants by grant_type (the identity provider registers authorization_code). */
  grants?: Record<string, GrantHandler>;
}

const FORM = 'application/x-www-form-urlencoded';

export const TokenResponse = Type.Object({
  access_token: Type.String({ description: 'JWT to send as Authorization: Bearer' }),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer({ description: 'Lifetime in seconds (3600 by default)' }),
  scope: Type.Optional(Type.String({ description: 'Space-separated scopes; payment-api for client credentials' })),
  id_token: Type.Optional(Type.String({ description: 'OpenID Connect ID token (authorization_code grant)' })),
  refresh_token: Type.Optional(Type.String({ description: 'Refresh token, when the client may use one' })),
});
export type TokenResponseT = Static<typeof TokenResponse>;

/**
 * A token request of the payment API (a merchant's API key, or client credentials with no
 * identity-application credentials): its errors stay problem+json, as every error of the
 * payment API. Every other token request is OAuth's, answered per RFC 6749 5.2.
 */
export function paymentApiTokenRequest(request: FastifyRequest): boolean {
  if (request.headers[API_KEY_HEADER] !== undefined) return true;
  const body = (request.body ?? {}) as Record<string, unknown>;
  // Application credentials are HTTP Basic or client_id in the body (RFC 6749 2.3.1); a
  // bearer token sent here is a payment-API client's mistake, answered as the payment API.
  const basic = /^basic /i.test(request.headers.authorization ?? '');
  return body.grant_type === 'client_credentials' && !basic && body.client_id === undefined;
}

export async function tokenRoutes(root: FastifyInstance, deps: TokenDeps) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  app.post('/oauth/token', {
    config: { oauthErrors: (request) => !paymentApiTokenRequest(request) },
    schema: {
      tags: ['Authentication'],
      summary: 'Get an access token (OAuth 2.0 client credentials)',
      description:
        'Send `grant_type=client_credentials` form-encoded with the API key in the `x-api-key` header. ' +
        'Errors of a request with an API key (the payment API) are problem+json with the OAuth members `error` and `error_description`; ' +
        'errors of identity applications\' requests are `application/json` `{error, error_description}` (RFC 6749 5.2), 401 with `WWW-Authenticate`. '
        + 'Identity applications may also send their requests as `application/json` (the identity SDK does; grant types authorization_code, refresh_token, password).',
      security: [{ apiKey: [] }],
      consumes: [FORM, 'application/json'],
      body: Type.Object({
        grant_type: Type.String({ minLength: 1, maxLength: 100, description: 'client_credentials' }),
        scope: Type.Optional(Type.String({ maxLength: 200, description: 'payment-api (the default)' })),
      }),
      response: { 200: TokenResponse, ...problemResponses(400, 401, 415) },
    },
    attachValidation: true,
    preValidation: async (request) => {
      const type = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
      // The identity SDK sends its token requests (authorization_code with PKCE,
      // refresh_token, password) as JSON; RFC 6749's form stays the rule for the rest.
      const sdkJson = type === 'application/json' && (request.body as { grant_type?: unknown } | undefined)?.grant_type !== 'client_credentials'
        && request.headers[API_KEY_HEADER] === undefined;
      if (type !== FORM && !sdkJson) {
        throw oauthError('invalid_request', `The token request must be sent as ${FORM}.`);
      }
    },
  }, async (request, reply) => {
    if (request.validationError) {
      const params = invalidParamsFrom((request.validationError.validation ?? []) as never, 'body');
      const problem = oauthError('invalid_request', `The token request is invalid: ${params.map((p) => `${p.name} ${p.reason}`).join('; ')}`);
      problem.extra.invalid_params = params;
      throw problem;
    }
    reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
    switch (request.body.grant_type) {
      case 'client_credentials':
        // Without an API key, an identity application's credentials (Management API); with
        // no credentials at all, a 401 whose challenge names both schemes.
        if (request.headers[API_KEY_HEADER] === undefined && request.headers.authorization === undefined && (request.body as Record<string, unknown>).client_id === undefined) {
          throw oauthError('invalid_client', `Send the API key in the ${API_KEY_HEADER} header (merchants), or client credentials (identity applications).`,
            { 'www-authenticate': `ApiKey realm="payd", header="${API_KEY_HEADER}", ${BASIC_CHALLENGE}` });
        }
        if (request.headers[API_KEY_HEADER] === undefined && deps.grants && Object.hasOwn(deps.grants, 'client_credentials')) {
          return deps.grants.client_credentials!({ headers: request.headers, body: request.body });
        }
        return clientCredentialsGrant({ headers: request.headers, body: request.body }, deps);
      default: {
        // A merchant's API key is for client credentials only: the identity provider's grants are its applications'.
        const grant = request.headers[API_KEY_HEADER] === undefined && deps.grants && Object.hasOwn(deps.grants, request.body.grant_type)
          ? deps.grants[request.body.grant_type] : undefined;
        if (grant) return grant({ headers: request.headers, body: request.body, ip: request.ip });
        throw oauthError('unsupported_grant_type', `grant_type "${request.body.grant_type}" is not supported.`);
      }
    }
  });
}
