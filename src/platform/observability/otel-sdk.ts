// The OpenTelemetry SDK: a tracer provider and its exporter. Loaded only when tracing is on
// (main.ts imports it when PAYD_OTEL_EXPORTER is otlp or console; tests build one around
// an InMemorySpanExporter). Spans are payd's own, made at its seams (tracing.ts): no
// auto-instrumentation, so nothing is patched and no loader hook is needed.
import { context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
// A static import (this module loads only when tracing is on): a dynamic import() of this
// CommonJS package finds no named export once bundled (dist/server/).
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { detectResources, envDetector, hostDetector, processDetector, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler, AlwaysOnSampler, BasicTracerProvider, BatchSpanProcessor, ConsoleSpanExporter, ParentBasedSampler,
  type Sampler, SimpleSpanProcessor, type SpanExporter, TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import { markTracingInstalled, type Tracing } from './tracing.ts';

/** Where spans go and which traces are kept (config.ts parses it from the environment). */
export interface TracingConfig {
  /** PAYD_OTEL_EXPORTER: none (default), otlp (OTLP/HTTP, the OTEL_EXPORTER_OTLP_* variables) or console (stdout); none whenever OTEL_SDK_DISABLED=true. */
  exporter: 'none' | 'otlp' | 'console';
  /** OTEL_TRACES_SAMPLER (default parentbased_always_on) and OTEL_TRACES_SAMPLER_ARG (the ratio of the *traceidratio samplers, default 1). */
  sampler: { name: 'always_on' | 'always_off' | 'traceidratio' | 'parentbased_always_on' | 'parentbased_always_off' | 'parentbased_traceidratio'; ratio: number };
  /** OTEL_SERVICE_NAME, default payd. */
  serviceName: string;
}

export interface TracingOptions {
  exporter: SpanExporter;
  /** Batch spans before exporting them (default); false: export each span as it ends (tests). */
  batch?: boolean;
  sampler?: TracingConfig['sampler'];
  serviceName?: string;
  serviceVersion?: string;
  /** Extra resource attributes (payd.role). */
  attributes?: Record<string, string>;
}

let contextManager: AsyncLocalStorageContextManager | undefined;

/**
 * Spans follow the work they belong to across awaits only with a context manager: one for
 * the process (the API's global), set by the first tracing made and kept.
 */
function ensureContextManager(): void {
  if (contextManager) return;
  contextManager = new AsyncLocalStorageContextManager().enable();
  if (!context.setGlobalContextManager(contextManager)) {
    // Another one was set before (an embedding application's): it carries spans as well.
    contextManager.disable();
  }
}

function sampler(spec: TracingConfig['sampler'] | undefined): Sampler | undefined {
  if (!spec) return undefined;
  switch (spec.name) {
    case 'always_on': return new AlwaysOnSampler();
    case 'always_off': return new AlwaysOffSampler();
    case 'traceidratio': return new TraceIdRatioBasedSampler(spec.ratio);
    case 'parentbased_always_on': return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off': return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio': return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(spec.ratio) });
  }
}

/** A tracer provider exporting to `exporter`, and payd's tracer from it. */
export function createTracing(opts: TracingOptions): Tracing {
  ensureContextManager();
  markTracingInstalled();
  const resource = resourceFromAttributes({
    [ATTR_SERVICE_NAME]: opts.serviceName ?? 'payd',
    ...(opts.serviceVersion ? { [ATTR_SERVICE_VERSION]: opts.serviceVersion } : {}),
    ...opts.attributes,
  }).merge(detectResources({ detectors: [hostDetector, processDetector, envDetector] }));
  const s = sampler(opts.sampler);
  const provider = new BasicTracerProvider({
    resource,
    ...(s ? { sampler: s } : {}),
    spanProcessors: [opts.batch === false ? new SimpleSpanProcessor(opts.exporter) : new BatchSpanProcessor(opts.exporter)],
  });
  return {
    tracer: provider.getTracer('payd', opts.serviceVersion),
    shutdown: () => provider.shutdown(),
    forceFlush: () => provider.forceFlush(),
  };
}

/** The tracing PAYD_OTEL_EXPORTER asks for, or undefined when it is none. */
export function tracingFromConfig(config: { tracing: TracingConfig; role: string }, version: string): Tracing | undefined {
  const t = config.tracing;
  if (t.exporter === 'none') return undefined;
  let exporter: SpanExporter;
  if (t.exporter === 'console') {
    exporter = new ConsoleSpanExporter();
  } else {
    // OTLP over HTTP (JSON): the endpoint, headers, timeout and TLS files come from the
    // standard OTEL_EXPORTER_OTLP_* variables, which the exporter reads itself.
    exporter = new OTLPTraceExporter();
  }
  return createTracing({ exporter, sampler: t.sampler, serviceName: t.serviceName, serviceVersion: version, attributes: { 'payd.role': config.role } });
}
