// OAuth 2.0 token endpoint errors (RFC 6749 section 5.2), rendered as problem+json that
// also carries the standard `error` and `error_description` members OAuth clients read.
import { Problem, PROBLEM_BASE } from '../../platform/http/problem.ts';

export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'invalid_scope';

export function oauthError(code: OAuthErrorCode, description: string, headers?: Record<string, string>): Problem {
  const status = code === 'invalid_client' ? 401 : 400;
  return new Problem({
    status,
    type: `${PROBLEM_BASE}oauth:${code}`,
    title: status === 401 ? 'Client authentication failed' : 'Token request refused',
    detail: description,
    extra: { error: code, error_description: description },
    headers: { 'cache-control': 'no-store', ...headers },
  });
}
