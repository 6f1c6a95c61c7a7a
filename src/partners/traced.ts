// The connector port with spans (tracing on only: app.ts registers the connectors through
// it when it has a tracer). Each call through the port (authorize, capture, refund, void,
// sync) is one span named partner.<call>, with the partner, the partner key and the
// outcome; never the request (it may hold a card number). Everything else a connector
// has (its routes, notifications, an in-process partner's inline answers) is the
// connector's own, untouched: an inline answer is no call and has no span.
import { ATTR, inSpan, SpanKind, type Tracer } from '../platform/observability/tracing.ts';
import { type PartnerConnector, type PartnerResult, PartnerRegistry } from './port.ts';

/** The span attributes of a partner call. */
const PARTNER_ATTR = {
  name: 'payd.partner.name',
  call: 'payd.partner.call',
  key: 'payd.partner.key',
  outcome: 'payd.partner.outcome',
  statusCode: 'payd.partner.status_code',
} as const;

type Call = 'authorize' | 'capture' | 'refund' | 'void' | 'sync';
const CALLS: readonly Call[] = ['authorize', 'capture', 'refund', 'void', 'sync'];

function traced<R extends PartnerResult | 'NOT_FOUND'>(tracer: Tracer, partner: string, call: Call, key: string, entityId: string, fn: () => Promise<R>): Promise<R> {
  return inSpan(tracer, `partner.${call}`, SpanKind.CLIENT,
    { [PARTNER_ATTR.name]: partner, [PARTNER_ATTR.call]: call, [PARTNER_ATTR.key]: key, [ATTR.entityId]: entityId },
    async (span) => {
      const result = await fn();
      if (result === 'NOT_FOUND') {
        span.setAttribute(PARTNER_ATTR.outcome, 'NOT_FOUND');
      } else {
        span.setAttribute(PARTNER_ATTR.outcome, result.outcome);
        span.setAttribute(PARTNER_ATTR.statusCode, result.status_code);
      }
      return result;
    });
}

/** The connector, its port calls in spans. A Proxy: the connector's own properties and methods are read from it as they are. */
export function tracedConnector(connector: PartnerConnector, tracer: Tracer): PartnerConnector {
  const name = connector.name;
  const calls: Partial<Record<Call, PartnerConnector[Call]>> = {};
  for (const call of CALLS) {
    const original = connector[call].bind(connector) as (req: { key: string; entityId: string }) => Promise<PartnerResult | 'NOT_FOUND'>;
    calls[call] = ((req: { key: string; entityId: string }) => traced(tracer, name, call, req.key, req.entityId, () => original(req))) as never;
  }
  return new Proxy(connector, {
    get(target, prop, receiver) {
      return (typeof prop === 'string' && (calls as Record<string, unknown>)[prop]) || Reflect.get(target, prop, receiver);
    },
  });
}

/** A registry of the same connectors, each traced. */
export function tracedPartners(partners: PartnerRegistry, tracer: Tracer): PartnerRegistry {
  const registry = new PartnerRegistry();
  for (const connector of partners.all()) registry.register(tracedConnector(connector, tracer));
  return registry;
}
