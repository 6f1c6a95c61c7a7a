// OAuth 2.0 token endpoint errors (RFC 6749 section 5.2). The OAuth endpoints render them
// as application/json {error, error_description} (route config oauthErrors); the payment
// API's token requests as problem+json that also carries those two members.
import { Problem, PROBLEM_BASE } from '../../platform/http/problem.ts';

export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'invalid_scope';

/** The challenge of a 401 from the token endpoint (RFC 6749 §5.2) unless the caller names another. */
export const BASIC_CHALLENGE = 'Basic realm="payd"';

export function oauthError(code: OAuthErrorCode, description: string, headers?: Record<string, string>): Problem {
  const status = code === 'invalid_client' ? 401 : 400;
  // The error is in the challenge too, where relying parties (openid-client) read it first.
  const challenge: Record<string, string> = status === 401 ? { 'www-authenticate': `${BASIC_CHALLENGE}, error="${code}"` } : {};
  return new Problem({
    status,
    type: `${PROBLEM_BASE}oauth:${code}`,
    title: status === 401 ? 'Client authentication failed' : 'Token request refused',
    detail: description,
    extra: { error: code, error_description: description },
    headers: { 'cache-control': 'no-store', ...challenge, ...headers },
  });
}
