// Schemas shared by every module: ids, timestamps, the problem body, auth requirements.
import { Type } from 'typebox';

export const Uuid = (description?: string) => Type.String({ format: 'uuid', ...(description ? { description } : {}) });
/** ISO 8601 with milliseconds and offset; handlers may return Date objects (serialized with toISOString). */
export const Timestamp = (description?: string) =>
  Type.Unsafe<Date | string>(Type.String({ format: 'date-time', ...(description ? { description } : {}) }));

export const IdParams = Type.Object({ id: Uuid() });

/** A closed set of strings as a plain JSON Schema enum (what code generators turn into a union type). */
export const StringEnum = <const T extends readonly string[]>(values: T, options?: string | { description?: string }) =>
  Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...(typeof options === 'string' ? { description: options } : options) });

export const InvalidParamSchema = Type.Object({
  name: Type.String({ description: 'Dotted path of the field, e.g. order.reference or split[0].amount' }),
  in: StringEnum(['body', 'query', 'path', 'header']),
  reason: Type.String(),
});

export const ProblemSchema = Type.Object(
  {
    type: Type.String({ description: 'URI identifying the kind of problem, e.g. urn:eu.service:invalid-request' }),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.Optional(Type.String()),
    instance: Type.String({ description: 'Path of the request' }),
    request_id: Type.Optional(Type.String({ description: 'Id of the request in payd logs (also in the x-request-id header)' })),
    invalid_params: Type.Optional(Type.Array(InvalidParamSchema)),
    resource_id: Type.Optional(Uuid('On idempotency violations: what the first request created')),
    same_request: Type.Optional(Type.Boolean({ description: 'On idempotency violations: true when this request is the first one again (a retry), false for another request reusing the key' })),
    available_amount: Type.Optional(Type.Integer({ description: 'On amount-not-available: what the operation could take now' })),
    max_operations: Type.Optional(Type.Integer({ description: 'On operation-limit-reached: the most operations a payment takes' })),
    error: Type.Optional(Type.String({ description: 'On the token endpoint: the OAuth 2.0 error code (RFC 6749 5.2)' })),
    error_description: Type.Optional(Type.String({ description: 'On the token endpoint: the OAuth 2.0 error description' })),
  },
  { $id: 'Problem', title: 'Problem', description: 'RFC 9457 problem details (application/problem+json)' },
);

/**
 * Response entries for the error statuses of an operation, all rendered as problem+json.
 * 500 and 503 are on every operation: any request can meet a bug, and any can meet the
 * database unavailable or the process stopping (503 with Retry-After). The others are
 * declared by each route, only where something produces them.
 */
export function problemResponses(...statuses: number[]): Record<number, unknown> {
  const out: Record<number, unknown> = {};
  for (const s of [...new Set([...statuses, 500, 503])].sort()) {
    out[s] = {
      description: STATUS_TEXT[s] ?? 'Error',
      content: { 'application/problem+json': { schema: Type.Ref('Problem') } },
    };
  }
  return out;
}

/** A bodiless response (the spec's "404 (no body)"). */
export const NoBody = (description: string) => Type.Null({ description });

const STATUS_TEXT: Record<number, string> = {
  400: 'Invalid request',
  401: 'Missing or invalid credentials',
  403: 'Credentials lack the right scope or entity',
  404: 'Not found',
  409: 'Conflict: idempotency violation (urn:eu.service:write-conflict with resource_id and same_request), or the resource is busy (retry after Retry-After)',
  413: 'Body too large',
  415: 'Unsupported content type',
  429: 'Too many requests',
  500: 'Internal error',
  503: 'Service unavailable: the database is unreachable or the process is stopping (Retry-After says when to retry)',
};
