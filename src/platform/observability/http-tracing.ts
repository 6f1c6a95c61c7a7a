// The HTTP seam of tracing (tracing on only; app.ts installs it when it has a tracer): one
// server span per request, named by its route template ("POST /v2/payments/{id}/captures"),
// with the method, the path (never the query: it may hold a token), the status code, the
// request id and the entity once authentication knows it. A W3C traceparent header sent
// by the client is the span's parent. The span is the active one for everything the
// request does (hooks, handler, services), and its ids are bound to the request's logger:
// every line the request logs, its "request completed" line included,
// carries trace_id and span_id. The probes (/healthz, /readyz, /metrics), polled every few
// seconds by a supervisor or Prometheus, are not traced.
import type { IncomingMessage } from 'node:http';
import { context, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, trace, type Tracer } from '@opentelemetry/api';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { activeTraceIds, ATTR, contextOf } from './tracing.ts';
import { requestChild } from './logger.ts';

const SPAN = Symbol('payd.http.span');
/** Set on a logger whose bindings hold trace_id and span_id (the request's): the mixin adds nothing to its lines. */
const IDS_BOUND = Symbol('payd.log.trace-ids');

type Traced = IncomingMessage & { [SPAN]?: Span };

/** Polled by supervisors and Prometheus: a trace each would bury the others. */
const PROBES = new Set(['/healthz', '/readyz', '/metrics']);

function pathOf(url: string | undefined): string {
  if (url === undefined) return '/';
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}

export interface HttpTracing {
  /** Fastify's childLoggerFactory: the request's logger with the span's ids bound. */
  childLoggerFactory(this: FastifyInstance, logger: FastifyBaseLogger, bindings: Record<string, unknown>, opts: object, raw: IncomingMessage): FastifyBaseLogger;
  /** pino's mixin: trace_id and span_id on the lines written while a span is active by a logger that does not bind them (app.log). */
  mixin(obj: object, level: number, logger: unknown): object;
  /** The hooks that start, carry and end each request's span. Register before any other onRequest hook. */
  register(app: FastifyInstance): void;
}

export function httpTracing(tracer: Tracer): HttpTracing {
  /** The request's span, started by whichever comes first: its logger or the onRequest hook. */
  const spanOf = (raw: Traced): Span => {
    let span = raw[SPAN];
    if (span === undefined) {
      const given = raw.headers.traceparent;
      span = tracer.startSpan(raw.method ?? 'HTTP', {
        kind: SpanKind.SERVER,
        attributes: { [ATTR.httpMethod]: raw.method, [ATTR.urlPath]: pathOf(raw.url) },
      }, contextOf(typeof given === 'string' ? given : undefined, ROOT_CONTEXT));
      raw[SPAN] = span;
    }
    return span;
  };

  const finish = (raw: Traced, status: number, entityId: string | undefined, aborted: boolean): void => {
    const span = raw[SPAN];
    if (span === undefined || !span.isRecording()) return;
    span.setAttribute(ATTR.httpStatus, status);
    if (entityId !== undefined) span.setAttribute(ATTR.entityId, entityId);
    if (aborted) span.setStatus({ code: SpanStatusCode.ERROR, message: 'aborted by the client' });
    else if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  };

  return {
    childLoggerFactory(logger, bindings, opts, raw) {
      if (PROBES.has(pathOf(raw.url))) return requestChild(logger, bindings, opts);
      const sc = spanOf(raw).spanContext();
      const child = requestChild(logger, { ...bindings, trace_id: sc.traceId, span_id: sc.spanId }, opts);
      (child as unknown as Record<symbol, boolean>)[IDS_BOUND] = true;
      return child;
    },
    mixin(_obj, _level, logger) {
      if ((logger as Record<symbol, boolean> | undefined)?.[IDS_BOUND]) return {};
      return activeTraceIds() ?? {};
    },
    register(app) {
      app.addHook('onRequest', (request, _reply, done) => {
        if (PROBES.has(pathOf(request.raw.url))) return done();
        const span = spanOf(request.raw);
        const route = request.routeOptions.url;
        if (route !== undefined) {
          span.updateName(`${request.method} ${route}`);
          span.setAttribute(ATTR.httpRoute, route);
        }
        span.setAttribute(ATTR.requestId, request.id);
        context.with(trace.setSpan(ROOT_CONTEXT, span), done);
      });
      app.addHook('onResponse', (request, reply, done) => {
        finish(request.raw, reply.statusCode, request.principal?.entityId, false);
        done();
      });
      app.addHook('onRequestAbort', (request, done) => {
        finish(request.raw, 499, request.principal?.entityId, true);
        done();
      });
    },
  };
}
