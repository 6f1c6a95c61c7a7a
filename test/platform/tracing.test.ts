// Tracing (platform/observability/tracing.ts, docs/operations.md "Tracing"): with an
// in-memory exporter, a payment created and captured with the partner called (not
// answered inline), then its events delivered by one round of the dispatcher, is one
// trace per request: the server span, the database's transactions and statements, the
// partner call, and the webhook delivery that continues the trace of the request that
// wrote its event. Each request's log lines carry its trace id. Off (no tracing given),
// nothing is recorded and events carry no trace context.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { createTracing } from '../../src/platform/observability/otel-sdk.ts';
import { loadConfig } from '../../src/config.ts';
import { createTestApp, type Merchant, type TestApp } from '../helpers/app.ts';
import { poll } from '../helpers/processes.ts';
import { type Receiver, setEndpoint, startReceiver } from '../webhooks/helpers.ts';

const PAN = '4242424242424242';
const card = { type: 'CARD', number: PAN, expiry_month: '12', expiry_year: '2031', cvv: '123' };
const NO_RATE_LIMITS = { rateLimitTokenPerKey: 0, rateLimitTokenPerAddress: 0, rateLimitApiPerKey: 0 };

const parentOf = (s: ReadableSpan): string | undefined => s.parentSpanContext?.spanId;
const idOf = (s: ReadableSpan): string => s.spanContext().spanId;
const traceOf = (s: ReadableSpan): string => s.spanContext().traceId;

/** Whether `span` descends from `ancestor` among `spans` (its parents, followed up). */
function descends(spans: ReadableSpan[], span: ReadableSpan, ancestor: ReadableSpan): boolean {
  const byId = new Map(spans.map((s) => [idOf(s), s]));
  for (let p = parentOf(span); p !== undefined; p = byId.get(p) ? parentOf(byId.get(p)!) : undefined) {
    if (p === idOf(ancestor)) return true;
  }
  return false;
}

describe('tracing', () => {
  const exporter = new InMemorySpanExporter();
  const tracing = createTracing({ exporter, batch: false, serviceVersion: 'test' });
  const lines: Array<Record<string, unknown>> = [];
  let t: TestApp;
  let m: Merchant;
  let rx: Receiver;
  // The simulators' time (a timed-out capture's outcome shows when the test moves it).
  let simNow = Date.now();

  before(async () => {
    rx = await startReceiver();
    t = await createTestApp({ simInline: false, webhookAllowPrivateTargets: true, logLevel: 'info', ...NO_RATE_LIMITS }, {
      tracing,
      clock: () => simNow,
      logStream: { write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) },
    });
    m = await t.createMerchant();
    await setEndpoint(t, m.entityId, `${rx.url}/hooks`);
  });
  after(async () => {
    await t.close();
    await rx.close();
    await tracing.shutdown();
  });

  it('traces a payment from its creation to its webhook deliveries, with the trace id in every log line of the request', async () => {
    exporter.reset();
    const created = await t.app.inject({
      method: 'POST', url: '/v2/payments', headers: { ...m.auth, 'x-idempotency-key': 'trace-1' },
      payload: { amount: 1000, currency: 'EUR', capture_mode: 'MANUAL', split: [{ partner: 'card-sim', method: 'CARD', amount: 1000, instrument: card }] },
    });
    assert.equal(created.statusCode, 200, created.body);
    const paymentId = created.json().id as string;
    const captured = await t.app.inject({
      method: 'POST', url: `/v2/payments/${paymentId}/captures`, headers: { ...m.auth, 'x-idempotency-key': 'trace-1-capture' }, payload: { amount: 600 },
    });
    assert.equal(captured.statusCode, 200, captured.body);
    assert.equal(await t.app.webhooks.dispatcher.runOnce(), 2, 'the two events delivered in one round');
    assert.equal(rx.requests.length, 2);

    const spans = exporter.getFinishedSpans();
    const servers = spans.filter((s) => s.kind === SpanKind.SERVER);
    const creation = servers.find((s) => s.name === 'POST /v2/payments');
    const capture = servers.find((s) => s.name === 'POST /v2/payments/:id/captures');
    assert.ok(creation && capture, `server spans: ${servers.map((s) => s.name).join(', ')}`);

    // The request's server span: route template, status, entity, request id; the client's trace is none (a root).
    assert.equal(parentOf(creation), undefined);
    assert.equal(creation.attributes['http.route'], '/v2/payments');
    assert.equal(creation.attributes['http.request.method'], 'POST');
    assert.equal(creation.attributes['http.response.status_code'], 200);
    assert.equal(creation.attributes['payd.entity_id'], m.entityId);
    assert.equal(creation.attributes['payd.request_id'], created.headers['x-request-id']);
    assert.equal(capture.attributes['url.path'], `/v2/payments/${paymentId}/captures`);
    assert.notEqual(traceOf(creation), traceOf(capture), 'one trace per request');

    for (const [server, call] of [[creation, 'authorize'], [capture, 'capture']] as const) {
      const trace = spans.filter((s) => traceOf(s) === traceOf(server));
      // Every span of the request's trace descends from its server span.
      for (const s of trace) if (s !== server) assert.ok(descends(spans, s, server), `${s.name} under ${server.name}`);
      // The database: transactions and statements, the statements' text without values.
      const txs = trace.filter((s) => s.name === 'db.transaction');
      const statements = trace.filter((s) => s.name === 'db.query');
      assert.ok(statements.length >= 2, `${server.name}: statements traced (${statements.length})`);
      for (const s of statements) {
        assert.equal(s.kind, SpanKind.CLIENT);
        assert.equal(s.attributes['db.system.name'], 'postgresql');
        assert.match(String(s.attributes['db.operation.name']), /^[A-Z]+$/);
        assert.equal(typeof s.attributes['db.query.text'], 'string');
      }
      for (const tx of txs) assert.equal(typeof tx.attributes['payd.db.statements'], 'number');
      // The partner call through the connector port, its outcome, and the simulator's own statements under it.
      const partner = trace.find((s) => s.name === `partner.${call}`);
      assert.ok(partner, `${server.name}: partner.${call} in ${trace.map((s) => s.name).join(', ')}`);
      assert.equal(partner.kind, SpanKind.CLIENT);
      assert.equal(partner.attributes['payd.partner.name'], 'card-sim');
      assert.equal(partner.attributes['payd.partner.call'], call);
      assert.equal(partner.attributes['payd.partner.outcome'], 'SUCCESS');
      assert.ok(statements.some((s) => parentOf(s) === idOf(partner) || txs.some((tx) => parentOf(tx) === idOf(partner))), 'the simulator\'s statements are the call\'s children');
    }

    // The deliveries: each continues (is a child of) the trace of the request that wrote its event.
    const deliveries = spans.filter((s) => s.name === 'webhook.deliver');
    assert.equal(deliveries.length, 2);
    const { rows: events } = await t.testDb.db.query<{ id: string; type: string; traceparent: string | null }>(
      'SELECT id, type, traceparent FROM webhook_events WHERE entity_id = $1 ORDER BY created_at', [m.entityId]);
    assert.deepEqual(events.map((e) => e.type), ['payment.authorized', 'payment.captured']);
    for (const [event, server] of [[events[0]!, creation], [events[1]!, capture]] as const) {
      assert.match(event.traceparent ?? '', new RegExp(`^00-${traceOf(server)}-[0-9a-f]{16}-01$`), 'the event keeps its request\'s trace context');
      const delivery = deliveries.find((d) => d.attributes['payd.webhook.event_id'] === event.id)!;
      assert.ok(delivery, `the delivery of ${event.type}`);
      assert.equal(traceOf(delivery), traceOf(server), `${event.type}: one trace from the request to the delivery`);
      assert.equal(parentOf(delivery), event.traceparent!.split('-')[2], 'the delivery is the child of the span that wrote the event');
      assert.ok(descends(spans, delivery, server));
      assert.equal(delivery.kind, SpanKind.CLIENT);
      assert.equal(delivery.attributes['server.address'], '127.0.0.1');
      assert.equal(delivery.attributes['http.response.status_code'], 200);
      assert.equal(delivery.attributes['payd.webhook.attempt'], 1);
      assert.equal(delivery.attributes['payd.webhook.event_type'], event.type);
      assert.equal(delivery.attributes['payd.webhook.outcome'], 'DELIVERED');
      assert.notEqual(delivery.status.code, SpanStatusCode.ERROR);
      // The attempt's record is the delivery's child.
      assert.ok(spans.some((s) => s.name === 'db.transaction' && parentOf(s) === idOf(delivery)), 'the attempt recorded under the delivery');
    }

    // No card number in any span.
    assert.ok(!JSON.stringify(spans.map((s) => ({ n: s.name, a: s.attributes, e: s.events }))).includes(PAN));

    // Every log line of the creation request carries its trace id, its one "request completed" line included.
    const ofRequest = lines.filter((l) => l.reqId === created.headers['x-request-id']);
    assert.ok(ofRequest.some((l) => l.msg === 'request completed'), JSON.stringify(ofRequest));
    for (const l of ofRequest) {
      assert.equal(l.trace_id, traceOf(creation), `log line "${String(l.msg)}"`);
      assert.equal(l.span_id, idOf(creation));
    }
    assert.ok(!JSON.stringify(lines).includes(PAN));
  });

  it('continues the trace a client sends (traceparent); a 4xx is no error; the probes are not traced', async () => {
    exporter.reset();
    const traceId = '0af7651916cd43dd8448eb211c80319c';
    const parent = 'b7ad6b7169203331';
    const res = await t.app.inject({ url: '/v2/payments?limit=1', headers: { ...m.auth, traceparent: `00-${traceId}-${parent}-01` } });
    assert.equal(res.statusCode, 200, res.body);
    const server = exporter.getFinishedSpans().find((s) => s.kind === SpanKind.SERVER)!;
    assert.equal(server.name, 'GET /v2/payments');
    assert.equal(traceOf(server), traceId);
    assert.equal(parentOf(server), parent);
    assert.equal(server.attributes['url.path'], '/v2/payments', 'never the query');
    // A malformed traceparent starts a new trace.
    exporter.reset();
    const fresh = await t.app.inject({ url: '/v2/payments/00000000-0000-4000-8000-000000000000', headers: { ...m.auth, traceparent: '00-zz-yy-01' } });
    assert.equal(fresh.statusCode, 404);
    const root = exporter.getFinishedSpans().find((s) => s.kind === SpanKind.SERVER)!;
    assert.equal(parentOf(root), undefined);
    assert.equal(root.name, 'GET /v2/payments/:id');
    assert.equal(root.attributes['http.response.status_code'], 404);
    assert.notEqual(root.status.code, SpanStatusCode.ERROR, 'a 4xx is not a server error');
    // The probes are not traced.
    exporter.reset();
    for (const url of ['/healthz', '/readyz', '/metrics']) assert.equal((await t.app.inject({ url })).statusCode, 200);
    assert.deepEqual(exporter.getFinishedSpans().map((s) => s.name), []);
  });

  it('traces a recovery pass: the settlement of a payment, its partner sync, its statements, and the event it writes', async () => {
    // 4000000000000416: authorized; captures time out at the acquirer, whose sync shows them succeeded a second later.
    const created = await t.app.inject({
      method: 'POST', url: '/v2/payments', headers: { ...m.auth, 'x-idempotency-key': 'trace-rec' },
      payload: { amount: 5000, currency: 'EUR', capture_mode: 'MANUAL', split: [{ partner: 'card-sim', method: 'CARD', amount: 5000, instrument: { ...card, number: '4000000000000416' } }] },
    });
    assert.equal(created.statusCode, 200, created.body);
    const id = created.json().id as string;
    const cap = await t.app.inject({ method: 'POST', url: `/v2/payments/${id}/captures`, headers: { ...m.auth, 'x-idempotency-key': 'trace-rec-1' }, payload: { amount: 3000 } });
    assert.equal(cap.json().captures[0].status, 'PENDING', cap.body);
    exporter.reset();
    simNow += 1200;
    await poll(() => t.app.services.recovery.runOnce(0), (n) => n >= 1, { everyMs: 10 });
    const spans = exporter.getFinishedSpans();
    const settle = spans.find((s) => s.name === 'recovery.settle' && s.attributes['payd.payment_id'] === id);
    assert.ok(settle, spans.map((s) => s.name).join(', '));
    assert.equal(parentOf(settle), undefined, 'a trace of its own');
    assert.equal(settle.attributes['payd.entity_id'], m.entityId);
    const sync = spans.find((s) => s.name === 'partner.sync' && traceOf(s) === traceOf(settle));
    assert.ok(sync && descends(spans, sync, settle), 'the partner asked, under the settlement');
    assert.ok(spans.some((s) => s.name === 'db.query' && descends(spans, s, settle)), 'its statements under it');
    const { rows } = await t.testDb.db.query<{ traceparent: string | null }>(
      `SELECT traceparent FROM webhook_events WHERE subject_id = $1 AND type = 'payment.captured'`, [id]);
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.traceparent?.split('-')[1], traceOf(settle), 'the event recovery writes carries its trace');
  });

  it('records nothing when tracing is off, and events carry no trace context', async () => {
    const off = await createTestApp({ simInline: false, webhookAllowPrivateTargets: true, ...NO_RATE_LIMITS });
    try {
      const om = await off.createMerchant();
      await setEndpoint(off, om.entityId, `${rx.url}/hooks`);
      exporter.reset();
      const created = await off.app.inject({
        method: 'POST', url: '/v2/payments', headers: { ...om.auth, 'x-idempotency-key': 'off-1' },
        payload: { amount: 500, currency: 'EUR', split: [{ partner: 'card-sim', method: 'CARD', amount: 500, instrument: card }] },
      });
      assert.equal(created.statusCode, 200, created.body);
      assert.ok(await off.app.webhooks.dispatcher.runOnce() >= 1);
      assert.deepEqual(exporter.getFinishedSpans().map((s) => s.name), []);
      const { rows } = await off.testDb.db.query<{ traceparent: string | null }>('SELECT traceparent FROM webhook_events WHERE entity_id = $1', [om.entityId]);
      assert.ok(rows.length >= 1);
      for (const r of rows) assert.equal(r.traceparent, null);
    } finally {
      await off.close();
    }
  });
});

describe('tracing configuration', () => {
  const env = { PAYD_ADMIN_TOKEN: 'test-admin-token-0123456789' };
  it('is off unless PAYD_OTEL_EXPORTER names an exporter, and off whenever OTEL_SDK_DISABLED is true', () => {
    assert.equal(loadConfig(env).tracing.exporter, 'none');
    assert.equal(loadConfig({ ...env, PAYD_OTEL_EXPORTER: 'otlp' }).tracing.exporter, 'otlp');
    assert.equal(loadConfig({ ...env, PAYD_OTEL_EXPORTER: 'otlp', OTEL_SDK_DISABLED: 'true' }).tracing.exporter, 'none');
    assert.deepEqual(loadConfig(env).tracing.sampler, { name: 'parentbased_always_on', ratio: 1 });
    assert.deepEqual(loadConfig({ ...env, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' }).tracing.sampler, { name: 'parentbased_traceidratio', ratio: 0.25 });
    assert.equal(loadConfig({ ...env, OTEL_SERVICE_NAME: 'payd-eu' }).tracing.serviceName, 'payd-eu');
  });
  it('names the variable of a bad value', () => {
    assert.throws(() => loadConfig({ ...env, PAYD_OTEL_EXPORTER: 'jaeger' }), /PAYD_OTEL_EXPORTER/);
    assert.throws(() => loadConfig({ ...env, OTEL_TRACES_SAMPLER: 'sometimes' }), /OTEL_TRACES_SAMPLER/);
    assert.throws(() => loadConfig({ ...env, OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '2' }), /OTEL_TRACES_SAMPLER_ARG/);
  });
});
