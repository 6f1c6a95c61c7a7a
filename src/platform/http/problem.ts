// The one error hierarchy. Every failure a client sees is a Problem rendered as
// application/problem+json (RFC 9457) by the handler in error-handler.ts.

export const PROBLEM_BASE = 'urn:eu.service:';

export interface InvalidParam {
  /** Dotted path of the field, e.g. "order.reference" or "grant_type". */
  name: string;
  /** Where the field was sent: body, query, path or header. */
  in: 'body' | 'query' | 'path' | 'header';
  reason: string;
}

export interface ProblemInit {
  status: number;
  type: string;
  title: string;
  detail?: string;
  /** Extra members of the problem body (e.g. resource_id, invalid_params). */
  extra?: Record<string, unknown>;
  /** Response headers (e.g. WWW-Authenticate, Retry-After). */
  headers?: Record<string, string>;
  /** Send the status with no body (the spec's "404 (no body)"). */
  noBody?: boolean;
}

export class Problem extends Error {
  readonly status: number;
  readonly type: string;
  readonly title: string;
  readonly detail: string | undefined;
  readonly extra: Record<string, unknown>;
  readonly headers: Record<string, string>;
  readonly noBody: boolean;

  constructor(init: ProblemInit) {
    super(init.detail ?? init.title);
    this.name = 'Problem';
    this.status = init.status;
    this.type = init.type;
    this.title = init.title;
    this.detail = init.detail;
    this.extra = init.extra ?? {};
    this.headers = init.headers ?? {};
    this.noBody = init.noBody ?? false;
  }
}

const t = (kind: string) => `${PROBLEM_BASE}${kind}`;

/** The types of the generic problems below, for isProblem (a refusal's type is its own kind). */
export const PROBLEM_TYPE = {
  invalidRequest: t('invalid-request'),
  unauthorized: t('unauthorized'),
  notFound: t('not-found'),
  conflict: t('conflict'),
  /** The spec's idempotency violation (a key already processed): urn:eu.service:write-conflict. */
  writeConflict: t('write-conflict'),
  tooManyRequests: t('too-many-requests'),
  resourceBusy: t('resource-busy'),
} as const;

/** Whether err is a problem of one of these types (callers branch on a problem's type, not its status). */
export function isProblem(err: unknown, ...types: string[]): err is Problem {
  return err instanceof Problem && types.includes(err.type);
}

export const problems = {
  invalidRequest: (detail: string, invalidParams?: InvalidParam[]) =>
    new Problem({
      status: 400,
      type: PROBLEM_TYPE.invalidRequest,
      title: 'Invalid request',
      detail,
      ...(invalidParams ? { extra: { invalid_params: invalidParams } } : {}),
    }),
  invalidField: (name: string, reason: string, where: InvalidParam['in'] = 'body') =>
    problems.invalidRequest(`${name}: ${reason}`, [{ name, in: where, reason }]),
  /** A business rule refused the request (amount not available, status incompatible, ...). */
  refused: (kind: string, title: string, detail: string, extra?: Record<string, unknown>) =>
    new Problem({ status: 400, type: t(kind), title, detail, ...(extra ? { extra } : {}) }),
  unauthorized: (detail: string, challenge = 'Bearer realm="payd"') =>
    new Problem({
      status: 401,
      type: PROBLEM_TYPE.unauthorized,
      title: 'Unauthorized',
      detail,
      headers: { 'www-authenticate': challenge },
    }),
  forbidden: (detail: string) => new Problem({ status: 403, type: t('forbidden'), title: 'Forbidden', detail }),
  notFound: (detail = 'The resource does not exist.', noBody = false) =>
    new Problem({ status: 404, type: PROBLEM_TYPE.notFound, title: 'Not found', detail, noBody }),
  /** The spec's bodiless 404 for client sessions and payments. */
  notFoundNoBody: () => problems.notFound(undefined, true),
  /**
   * sameRequest: whether this request is the first one again (a retry: its method, route
   * and body are the first request's) or another request reusing the key; omitted when
   * the first request's fingerprint is not known.
   */
  idempotencyViolation: (instance: string, resourceId: string, sameRequest?: boolean) =>
    new Problem({
      status: 409,
      type: PROBLEM_TYPE.writeConflict,
      title: 'Idempotency violation',
      detail: sameRequest === false
        ? 'This idempotency key was already used by another request (another body or operation); resource_id names what that first request created. Use a new key for a new request.'
        : 'This idempotency key was already used; resource_id names what the first request created.',
      extra: { instance, resource_id: resourceId, ...(sameRequest !== undefined ? { same_request: sameRequest } : {}) },
    }),
  conflict: (detail: string) => new Problem({ status: 409, type: PROBLEM_TYPE.conflict, title: 'Conflict', detail }),
  tooManyRequests: (detail: string, retryAfterSeconds: number) =>
    new Problem({
      status: 429,
      type: PROBLEM_TYPE.tooManyRequests,
      title: 'Too many requests',
      detail,
      headers: { 'retry-after': String(retryAfterSeconds) },
    }),
  /** Another transaction holds the resource's row lock for longer than payd waits: nothing was done, retry (same idempotency key). */
  resourceBusy: (detail: string, retryAfterSeconds: number) =>
    new Problem({
      status: 409,
      type: PROBLEM_TYPE.resourceBusy,
      title: 'Resource busy',
      detail,
      headers: { 'retry-after': String(retryAfterSeconds) },
    }),
  internal: () =>
    new Problem({
      status: 500,
      type: t('internal-error'),
      title: 'Internal server error',
      detail: 'An unexpected error occurred. It has been logged with the request id.',
    }),
  unavailable: (detail: string, retryAfterSeconds = 1) =>
    new Problem({
      status: 503,
      type: t('service-unavailable'),
      title: 'Service unavailable',
      detail,
      headers: { 'retry-after': String(retryAfterSeconds) },
    }),
};
