// The identity SDK's errors as it reads them: {error, error_description, error_user_msg}
// (the SDK rejects its promise with them, camelCased), and the route config that answers
// a route's problems in that shape (oauth/oauth-errors.ts).
import { Problem, PROBLEM_BASE } from '../../platform/http/problem.ts';

/** An error as the SDK reads it: {error, error_description, error_user_msg}. */
export function sdkError(status: number, error: string, description: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}): Problem {
  return new Problem({
    status, type: `${PROBLEM_BASE}identity:${error}`, title: description, detail: description,
    extra: { error, error_description: description, error_user_msg: description, ...extra }, headers,
  });
}

/** Route config of the SDK's JSON endpoints: errors as JSON {error, ...}. */
export const SDK_JSON = { oauthErrors: () => true };
