// The identity provider's discovery: its OpenID Provider metadata and the public keys of
// the RS256 id_tokens (idp/idp.routes.ts assembles).
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { problemResponses } from '../../platform/http/schemas.ts';
import { type IdentityService, PROMPT_VALUES } from '../idp/idp.service.ts';

export async function discoveryRoutes(root: FastifyInstance, { identity, baseUrl }: { identity: IdentityService; baseUrl: string }) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();

  app.get('/.well-known/openid-configuration', { schema: { tags: ['Identity'], summary: 'OpenID Provider metadata', response: problemResponses() } }, async () => ({
    issuer: baseUrl,
    authorization_endpoint: `${baseUrl}/oauth/authorize`,
    token_endpoint: `${baseUrl}/oauth/token`,
    userinfo_endpoint: `${baseUrl}/userinfo`,
    introspection_endpoint: `${baseUrl}/oauth/introspect`,
    revocation_endpoint: `${baseUrl}/oauth/revoke`,
    end_session_endpoint: `${baseUrl}/oauth/logout`,
    jwks_uri: `${baseUrl}/.well-known/jwks.json`,
    response_types_supported: ['code'],
    response_modes_supported: ['query', 'web_message'],
    grant_types_supported: ['authorization_code', 'refresh_token', 'client_credentials', 'password'],
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: ['HS256', 'RS256'],
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    introspection_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    revocation_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    code_challenge_methods_supported: ['S256'],
    prompt_values_supported: [...PROMPT_VALUES],
    claims_parameter_supported: false,
    request_parameter_supported: false,
    request_uri_parameter_supported: false,
    scopes_supported: ['openid', 'profile', 'email', 'offline_access'],
    claims_supported: ['sub', 'iss', 'aud', 'exp', 'iat', 'auth_time', 'nonce', 'given_name', 'family_name', 'email', 'email_verified'],
    authorization_response_iss_parameter_supported: true,
  }));

  // Keys of the RS256 id_tokens of public clients (confidential ones get HS256 with their secret).
  app.get('/.well-known/jwks.json', { schema: { tags: ['Identity'], summary: 'Public keys of RS256 id_tokens', response: problemResponses() } }, async () => identity.jwks());
}
