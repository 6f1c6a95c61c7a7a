// grant_type=client_credentials: a merchant trades its API key (x-api-key header) for a
// payment-api access token. The key is resolved through the entities service's cache of
// active keys (admin/entities.service.ts), which every process empties of a revoked key on
// its NOTIFY, wholly when its listening connection is lost or comes back, and after 30 s in
// any case: a revoked key stops issuing tokens at once in every process.
import { API_KEY_HEADER } from '../../../platform/http/auth.ts';
import type { AccessTokens, IssuedToken } from '../access-tokens.ts';
import { PAYMENT_API_SCOPE } from '../access-tokens.ts';
import { oauthError } from '../oauth-errors.ts';

export interface ApiKeyResolver {
  resolveApiKey(apiKey: string, request?: object): Promise<{ id: string; entity_id: string } | undefined>;
}

export interface TokenRequest {
  headers: Record<string, string | string[] | undefined>;
  body: Record<string, unknown>;
  /** The caller's address (the password grant's throttle). */
  ip?: string;
}

const CHALLENGE = { 'www-authenticate': `ApiKey realm="payd", header="${API_KEY_HEADER}"` };

export async function clientCredentialsGrant(
  req: TokenRequest,
  deps: { apiKeys: ApiKeyResolver; tokens: AccessTokens },
): Promise<IssuedToken> {
  const apiKey = req.headers[API_KEY_HEADER];
  if (typeof apiKey !== 'string' || apiKey === '') {
    throw oauthError('invalid_client', `Send the API key in the ${API_KEY_HEADER} header.`, CHALLENGE);
  }
  const scope = req.body.scope;
  if (scope !== undefined && scope !== PAYMENT_API_SCOPE) {
    throw oauthError('invalid_scope', `The only scope of this grant is "${PAYMENT_API_SCOPE}".`);
  }
  const key = await deps.apiKeys.resolveApiKey(apiKey, req.headers);
  if (!key) throw oauthError('invalid_client', 'The API key is unknown or revoked.', CHALLENGE);
  return deps.tokens.issue({ entityId: key.entity_id, apiKeyId: key.id, scope: PAYMENT_API_SCOPE });
}
