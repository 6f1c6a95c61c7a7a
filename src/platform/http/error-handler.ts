// One handler renders every error of every route as application/problem+json.
// 5xx bodies never carry internals; the error is logged with the request id instead.
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { type InvalidParam, Problem, PROBLEM_BASE, problems } from './problem.ts';
import { IdempotencyKeys } from './idempotency.ts';
import { BUSY_RETRY_AFTER_SECONDS, DATABASE_RETRY_AFTER_SECONDS, isConnectionFailure, isLockTimeout } from '../db/errors.ts';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json; charset=utf-8';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * OAuth endpoints (RFC 6749 5.2, RFC 6750 3): when this answers true for a request, its
     * errors are application/json {error, error_description} instead of problem+json.
     */
    oauthErrors?: (request: FastifyRequest) => boolean;
  }
}

/** The RFC 6749 error code of a problem that does not name one. */
function oauthCode(problem: Problem): string {
  if (typeof problem.extra.error === 'string') return problem.extra.error;
  if (problem.status >= 500) return problem.status === 503 ? 'temporarily_unavailable' : 'server_error';
  if (problem.status === 401) return 'invalid_client';
  return 'invalid_request';
}

const CONTEXT: Record<string, InvalidParam['in']> = {
  body: 'body',
  querystring: 'query',
  params: 'path',
  headers: 'header',
};

interface AjvError {
  instancePath: string;
  schemaPath?: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
}

/** Properties that tell which branch of a union an object was meant for. */
const DISCRIMINATORS = ['type', 'method'];

/**
 * Folds the errors of unions (anyOf/oneOf) into what the client needs to fix: a union of
 * literals becomes one "must be one of A, B, C"; a union of objects is reported for the
 * branch the input was meant for (the one whose `type` or `method` it matches), and when
 * it matches none, as the allowed values of that discriminator. Other unions are left as
 * Ajv reports them.
 */
export function collapseUnions(errors: AjvError[]): AjvError[] {
  let out = errors;
  for (const u of errors) {
    if ((u.keyword !== 'anyOf' && u.keyword !== 'oneOf') || !u.schemaPath || !out.includes(u)) continue;
    const prefix = `${u.schemaPath}/`;
    const branchOf = (e: AjvError) => (e !== u && e.schemaPath?.startsWith(prefix) ? Number(e.schemaPath.slice(prefix.length).split('/')[0]) : undefined);
    const members = out.filter((e) => branchOf(e) !== undefined);
    if (!members.length) continue;
    const without = (drop: AjvError[], add: AjvError[]) => {
      const gone = new Set(drop);
      const at = out.indexOf(u);
      out = [...out.slice(0, at).filter((e) => !gone.has(e)), ...add, ...out.slice(at).filter((e) => !gone.has(e))];
    };
    if (members.every((e) => e.keyword === 'const' && e.instancePath === u.instancePath)) {
      without([u, ...members], [{ instancePath: u.instancePath, keyword: 'enum', params: { allowedValues: members.map((e) => e.params.allowedValue) } }]);
      continue;
    }
    const isDiscriminator = (e: AjvError) => (e.keyword === 'const' || e.keyword === 'enum') && DISCRIMINATORS.some((d) => e.instancePath === `${u.instancePath}/${d}`);
    const discriminators = members.filter(isDiscriminator);
    if (!discriminators.length) continue;
    const branches = new Map<number, AjvError[]>();
    for (const e of members) branches.set(branchOf(e)!, [...(branches.get(branchOf(e)!) ?? []), e]);
    const meant = [...branches].filter(([, errs]) => !errs.some(isDiscriminator));
    if (meant.length === 1) {
      const keep = new Set(meant[0]![1]);
      without([u, ...members.filter((e) => !keep.has(e))], []);
    } else if (meant.length === 0) {
      const byField = new Map<string, unknown[]>();
      for (const e of discriminators) {
        const values = e.keyword === 'const' ? [e.params.allowedValue] : (e.params.allowedValues as unknown[] ?? []);
        byField.set(e.instancePath, [...(byField.get(e.instancePath) ?? []), ...values]);
      }
      without([u, ...members], [...byField].map(([instancePath, values]) => ({ instancePath, keyword: 'enum', params: { allowedValues: [...new Set(values)] } })));
    }
  }
  return out;
}

/** "/split/0/amount" -> "split[0].amount" */
export function fieldName(instancePath: string, child?: string): string {
  const parts = instancePath.split('/').filter(Boolean).map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (child !== undefined) parts.push(child);
  return parts.reduce((acc, p) => (/^\d+$/.test(p) ? `${acc}[${p}]` : acc ? `${acc}.${p}` : p), '');
}

export function invalidParamsFrom(errors: AjvError[], where: InvalidParam['in']): InvalidParam[] {
  const seen = new Set<string>();
  const out: InvalidParam[] = [];
  for (const e of collapseUnions(errors)) {
    let name = fieldName(e.instancePath);
    let reason = e.message ?? 'is invalid';
    if (e.keyword === 'required') {
      name = fieldName(e.instancePath, String(e.params.missingProperty));
      reason = 'is required';
    } else if (e.keyword === 'additionalProperties') {
      name = fieldName(e.instancePath, String(e.params.additionalProperty));
      reason = 'is not a known field';
    } else if (e.keyword === 'enum' && Array.isArray(e.params.allowedValues)) {
      const values = e.params.allowedValues as unknown[];
      reason = values.length === 1 ? `must be ${String(values[0])}` : `must be one of ${values.join(', ')}`;
    } else if (e.keyword === 'const' && e.params.allowedValue !== undefined) {
      reason = `must be ${String(e.params.allowedValue)}`;
    }
    // anyOf/oneOf produce one error per branch plus a summary; keep the first per field.
    const key = `${where}:${name}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ name: name || where, in: where, reason });
  }
  return out;
}

function fromFastifyError(err: FastifyError): Problem {
  if (err.validation) {
    const where = CONTEXT[err.validationContext ?? 'body'] ?? 'body';
    const params = invalidParamsFrom(err.validation as AjvError[], where);
    const detail = params.map((p) => `${p.name} ${p.reason}`).join('; ');
    return problems.invalidRequest(`The request ${where === 'body' ? 'body' : where} is invalid: ${detail}`, params);
  }
  const status = err.statusCode ?? 500;
  if (status >= 500) return problems.internal();
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new Problem({ status: 413, type: `${PROBLEM_BASE}payload-too-large`, title: 'Payload too large', detail: 'The request body exceeds the size limit.' });
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new Problem({ status: 415, type: `${PROBLEM_BASE}unsupported-media-type`, title: 'Unsupported media type', detail: 'The Content-Type of the request is not accepted by this operation.' });
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return problems.invalidRequest('The Content-Length header does not match the body.');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return problems.invalidRequest('The body is empty but Content-Type is application/json.');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return problems.invalidRequest('The body is not valid JSON.');
    case 'FST_ERR_BAD_URL':
      return problems.invalidRequest('The path is not a valid URL: a percent-encoding is malformed or is not UTF-8.', [{ name: 'path', in: 'path', reason: 'is not valid percent-encoded UTF-8' }]);
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new Problem({ status: 414, type: `${PROBLEM_BASE}uri-too-long`, title: 'URI too long', detail: 'A path parameter is longer than any identifier payd issues.' });
  }
  if (err instanceof SyntaxError) return problems.invalidRequest('The body is not valid JSON.');
  return new Problem({
    status,
    type: `${PROBLEM_BASE}${status === 400 ? 'invalid-request' : 'http-' + status}`,
    title: status === 400 ? 'Invalid request' : (err.name || 'Error'),
    detail: err.message,
  });
}

export function sendProblem(request: FastifyRequest, reply: FastifyReply, problem: Problem): FastifyReply {
  reply.code(problem.status);
  for (const [k, v] of Object.entries(problem.headers)) reply.header(k, v);
  if (problem.noBody) {
    reply.removeHeader('content-type');
    return reply.send();
  }
  const oauth = request.routeOptions?.config?.oauthErrors;
  if (oauth?.(request)) {
    // error and error_description first; the problem's other members (invalid_params,
    // request_id) stay as extension members, which RFC 6749 allows clients to ignore.
    const { error: _e, error_description: _d, ...extra } = problem.extra;
    if (problem.status === 401 && !reply.hasHeader('www-authenticate')) reply.header('www-authenticate', 'Basic realm="payd"');
    reply.header('cache-control', 'no-store');
    reply.type('application/json; charset=utf-8');
    return reply.send(JSON.stringify({
      error: oauthCode(problem),
      error_description: typeof problem.extra.error_description === 'string' ? problem.extra.error_description : (problem.detail ?? problem.title),
      ...extra,
      request_id: request.id,
    }));
  }
  const instance = request.url.split('?')[0];
  reply.type(PROBLEM_CONTENT_TYPE);
  return reply.send(
    JSON.stringify({
      type: problem.type,
      title: problem.title,
      status: problem.status,
      ...(problem.detail !== undefined ? { detail: problem.detail } : {}),
      instance,
      request_id: request.id,
      ...problem.extra,
    }),
  );
}

/**
 * Fastify's refusals before a route is found (its frameworkErrors option): a malformed
 * percent-encoding, an over-long path parameter. No hook has run for them.
 */
export function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  reply.header('x-request-id', request.id);
  reply.header('x-content-type-options', 'nosniff');
  const problem = fromFastifyError(error);
  if (problem.status >= 500) request.log.error({ err: error }, 'request failed');
  else request.log.info({ code: error.code, status: problem.status }, 'request refused');
  return sendProblem(request, reply, problem);
}

/**
 * Requests Node's HTTP parser refuses (malformed request line or header, headers too
 * large, timeouts): answered on the socket, as problem+json too (Fastify's
 * clientErrorHandler option).
 */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const status = err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : err.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400;
  const detail = status === 408 ? 'The request took too long to arrive.' : status === 431 ? 'The request headers are too large.' : 'The request is not valid HTTP.';
  const title = STATUS_CODES[status]!;
  const body = JSON.stringify({ type: `${PROBLEM_BASE}${status === 400 ? 'invalid-request' : 'http-' + status}`, title, status, detail, instance: '/' });
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${status} ${title}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: ${PROBLEM_CONTENT_TYPE}\r\nConnection: close\r\n\r\n${body}`);
  }
  socket.destroy(err);
}

export const errorHandlerPlugin = fp(async function errorHandler(app: FastifyInstance) {
  app.setErrorHandler((error: FastifyError | Problem, request, reply) => {
    if (!(error instanceof Problem) && isLockTimeout(error)) {
      // The row this request needs (one payment) is locked by another transaction for
      // longer than payd waits (lock_timeout), or this process already waits for it: a
      // conflict on that resource only, not an outage. Nothing was written.
      request.log.info({ code: '55P03' }, 'resource busy');
      return sendProblem(request, reply, problems.resourceBusy(
        'Another request is changing this resource. Retry after Retry-After seconds, with the same idempotency key.', BUSY_RETRY_AFTER_SECONDS));
    }
    if (!(error instanceof Problem) && isConnectionFailure(error)) {
      // The database is down or dropped the connection: not a bug, the client retries.
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      request.log.warn({ code: (error as { code?: string }).code, reason: cause?.message ?? (error as Error).message }, 'database unavailable');
      return sendProblem(request, reply, problems.unavailable('The database is unavailable. Retry later with the same idempotency key.', DATABASE_RETRY_AFTER_SECONDS));
    }
    const problem = error instanceof Problem ? error : fromFastifyError(error as FastifyError);
    if (problem.status >= 500) {
      request.log.error({ err: error }, 'request failed');
    } else if (!(error instanceof Problem)) {
      request.log.info({ code: (error as FastifyError).code, status: problem.status }, 'request refused');
    }
    if (request.routeOptions.config?.idempotency) {
      // A request refused before its handler (not JSON, too large, invalid...) whose
      // idempotency key is already processed: 409 write-conflict naming the first
      // request's resource rather than the refusal (platform/http/idempotency.ts).
      return IdempotencyKeys.refusedBeforeHandler(request, problem).then(
        (conflict) => sendProblem(request, reply, conflict ?? problem),
        (err: unknown) => {
          request.log.error({ err }, 'idempotency key not looked up');
          return sendProblem(request, reply, isConnectionFailure(err)
            ? problems.unavailable('The database is unavailable. Retry later with the same idempotency key.', DATABASE_RETRY_AFTER_SECONDS)
            : problems.internal());
        });
    }
    return sendProblem(request, reply, problem);
  });
  app.setNotFoundHandler((request, reply) =>
    sendProblem(request, reply, problems.notFound(`No route ${request.method} ${request.url.split('?')[0]}.`)),
  );
});
