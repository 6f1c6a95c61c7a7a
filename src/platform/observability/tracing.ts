// Tracing (OpenTelemetry), off unless configured (PAYD_OTEL_EXPORTER; docs/operations.md,
// Tracing). This module holds what payd's seams need and imports only the OpenTelemetry
// API; the SDK (provider, exporters) loads only when tracing is on (otel-sdk.ts).
//
// When tracing is off there is no tracer: every seam (the HTTP hooks in app.ts, the
// database decorator db/traced.ts, the partner decorator partners/traced.ts, the webhook
// dispatcher, the recovery worker) is then the plain code, with no span, closure or hook
// of its own. The one call left on a hot path is currentTraceparent() when an event is
// written, which then reads one flag.
import { context, type Context, isSpanContextValid, type Span, SpanKind, type SpanContext, SpanStatusCode, trace, TraceFlags, type Tracer } from '@opentelemetry/api';

export { SpanKind, SpanStatusCode, type Span, type Tracer };

/** A tracer and its provider's end: what buildApp and main.ts hold when tracing is on. */
export interface Tracing {
  tracer: Tracer;
  /** Exports what is buffered (BatchSpanProcessor) and stops the exporter. */
  shutdown(): Promise<void>;
  /** Exports what is buffered, without stopping. */
  forceFlush(): Promise<void>;
}

// Attribute names (OpenTelemetry semantic conventions where one exists, payd.* otherwise).
// Those of a domain (payd.payment_id, payd.partner.*, payd.webhook.*) are named by the
// module that sets them (payments/recovery.ts, partners/traced.ts, webhooks/dispatcher.ts).
export const ATTR = {
  dbSystem: 'db.system.name',
  dbOperation: 'db.operation.name',
  dbQueryText: 'db.query.text',
  dbStatus: 'db.response.status_code',
  httpMethod: 'http.request.method',
  httpRoute: 'http.route',
  httpStatus: 'http.response.status_code',
  urlPath: 'url.path',
  urlScheme: 'url.scheme',
  serverAddress: 'server.address',
  serverPort: 'server.port',
  errorType: 'error.type',
  requestId: 'payd.request_id',
  entityId: 'payd.entity_id',
} as const;

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** Whether a tracing was made in this process (otel-sdk.ts): until then no span can be active. */
let installed = false;

/** Called by otel-sdk.ts when it makes a tracing. */
export function markTracingInstalled(): void {
  installed = true;
}

/**
 * The W3C traceparent of the span active now, or null (tracing off, or outside any span).
 * The outbox stores it with each event (outbox.ts) so that its delivery continues the trace.
 */
export function currentTraceparent(): string | null {
  // Off: one flag, not the API's lookup of the no-op context (a few hundred ns).
  if (!installed) return null;
  const span = trace.getSpan(context.active());
  if (span === undefined) return null;
  const sc = span.spanContext();
  if (!isSpanContextValid(sc)) return null;
  return `00-${sc.traceId}-${sc.spanId}-0${(sc.traceFlags & TraceFlags.SAMPLED).toString(16)}`;
}

/** A traceparent's span context (remote), or undefined when it is not one (version 00). */
export function parseTraceparent(value: string | null | undefined): SpanContext | undefined {
  if (typeof value !== 'string') return undefined;
  const m = TRACEPARENT.exec(value.trim());
  if (!m) return undefined;
  const sc: SpanContext = { traceId: m[1]!, spanId: m[2]!, traceFlags: parseInt(m[3]!, 16) & TraceFlags.SAMPLED, isRemote: true };
  return isSpanContextValid(sc) ? sc : undefined;
}

/** The context whose parent is the given traceparent's span (or the root context when it is none). */
export function contextOf(traceparent: string | null | undefined, base: Context = context.active()): Context {
  const sc = parseTraceparent(traceparent);
  return sc ? trace.setSpanContext(base, sc) : base;
}

/** The ids a log line carries (trace_id, span_id) for the span active now, or undefined. */
export function activeTraceIds(): { trace_id: string; span_id: string } | undefined {
  const span = trace.getSpan(context.active());
  if (span === undefined) return undefined;
  const sc = span.spanContext();
  return isSpanContextValid(sc) ? { trace_id: sc.traceId, span_id: sc.spanId } : undefined;
}

/** Whether a span is active now (the database decorator records statements only inside one). */
export function inActiveSpan(): boolean {
  return trace.getSpan(context.active()) !== undefined;
}

/**
 * Runs fn inside a new span, child of the active one (or of `parent`), and ends it when fn
 * settles. A thrown error marks the span ERROR with its class name only: messages may hold
 * values payd does not log.
 */
export function inSpan<T>(tracer: Tracer, name: string, kind: SpanKind, attributes: Record<string, string | number | boolean | undefined>,
  fn: (span: Span) => Promise<T>, parent?: Context): Promise<T> {
  return tracer.startActiveSpan(name, { kind, attributes }, parent ?? context.active(), async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      failed(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

/** Marks a span ERROR for this error: its class (and SQLSTATE or code when it has one), never its message. */
export function failed(span: Span, err: unknown): void {
  const type = err instanceof Error ? err.name : typeof err;
  span.setAttribute(ATTR.errorType, type);
  span.setStatus({ code: SpanStatusCode.ERROR, message: type });
}
