// Typed errors: one class per kind of problem payd answers (its `type`), so callers can
// `catch (e) { if (e instanceof AmountNotAvailableError) ... }`.

/** An RFC 9457 problem as payd sends it (application/problem+json). */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail?: string;
  instance?: string;
  request_id?: string;
  invalid_params?: Array<{ name: string; in: string; reason: string }>;
  resource_id?: string;
  same_request?: boolean;
  available_amount?: number;
  max_operations?: number;
  [member: string]: unknown;
}

export class PaydError extends Error {
  /** HTTP status; 0 when no answer came (network error, timeout). */
  readonly status: number;
  readonly problem: Problem | undefined;
  /** payd's x-request-id of the failed call (give it to payd's operator). */
  readonly requestId: string | undefined;
  constructor(message: string, status: number, problem?: Problem, requestId?: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.status = status;
    this.problem = problem;
    this.requestId = requestId ?? problem?.request_id;
  }
  get type(): string | undefined {
    return this.problem?.type;
  }
}

/** 400 urn:eu.service:invalid-request: invalidParams names each field and why. */
export class InvalidRequestError extends PaydError {
  get invalidParams() {
    return this.problem?.invalid_params ?? [];
  }
}
/** 400 amount-not-available: availableAmount is what the operation could take now. */
export class AmountNotAvailableError extends PaydError {
  get availableAmount(): number | undefined {
    return this.problem?.available_amount;
  }
}
/** 401: the API key (or the token) is missing, unknown or revoked. */
export class AuthenticationError extends PaydError {}
/** 403: the credential lacks the scope, or names another entity. */
export class PermissionError extends PaydError {}
/** 404: no such object for this entity. */
export class NotFoundError extends PaydError {}
/**
 * 409 urn:eu.service:write-conflict: the idempotency key was already used by another
 * request (another body or operation, or one payd refused); resourceId names what that
 * first request created, which this call did not make. Use a new key for a new request.
 * (A retry of the first request itself is not an error: the client returns the first
 * outcome, with `replayed`.)
 */
export class IdempotencyError extends PaydError {
  get resourceId(): string | undefined {
    return this.problem?.resource_id;
  }
  /** true: payd says this was the first request again (seen only where the first outcome cannot be read back: a secret rotation). */
  get sameRequest(): boolean | undefined {
    return this.problem?.same_request;
  }
}
/** 429, after the client's own retries. */
export class RateLimitError extends PaydError {}
/** 503, after the client's own retries: the database is unavailable or payd is stopping. */
export class ServiceUnavailableError extends PaydError {}
/** Other 5xx, after the client's own retries. */
export class APIError extends PaydError {}
/** No answer: the network failed or the call timed out (after the client's own retries). */
export class ConnectionError extends PaydError {}

/** The error for an answer that is not 2xx. */
export function errorFor(status: number, problem: Problem | undefined, requestId: string | undefined): PaydError {
  const kind = problem?.type?.replace(/^urn:eu\.service:/, '');
  const message = problem ? `${problem.title}${problem.detail ? `: ${problem.detail}` : ''}` : `HTTP ${status}`;
  const Class =
    kind === 'invalid-request' ? InvalidRequestError
      : kind === 'amount-not-available' ? AmountNotAvailableError
        : kind === 'write-conflict' ? IdempotencyError
          : status === 401 ? AuthenticationError
            : status === 403 ? PermissionError
              : status === 404 ? NotFoundError
                : status === 429 ? RateLimitError
                  : status === 503 ? ServiceUnavailableError
                    : status >= 500 ? APIError
                      : PaydError;
  return new Class(message, status, problem, requestId);
}
