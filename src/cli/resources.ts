// `payd payments …`, `payd events …` (list, get, resend) and `payd webhook-endpoints …`: a merchant's developer works with resources of a
// running payd from the shell, with an API key (--api-key, PAYD_API_KEY or a profile of payd
// login; --base-url or PAYD_URL), as the SDK does: every creating call carries an idempotency key (printed, so
// that a lost answer can be retried with --idempotency-key). Lists print one line per item
// (--json: the API's page as it is); a single resource prints as JSON.
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { Api, CliError, conn, UUID } from './dev.ts';

const COMMON = { 'api-key': { type: 'string' }, 'base-url': { type: 'string' }, profile: { type: 'string' }, json: { type: 'boolean' } } as const;

interface Page<T> { data: T[]; has_more: boolean; next_cursor: string | null }
interface PaymentItem {
  id: string; created_at: string; amount: number; currency: string; order_reference?: string;
  authorization: { status: string }; amounts: { total_captured: number; total_refunded: number; total_voided: number };
}
interface EventItem { id: string; type: string; created_at: string }

const idOf = (positionals: string[], what: string) => {
  const id = positionals[0];
  if (!id || !UUID.test(id)) throw new CliError(`${what}: a ${what.split(' ')[1] ?? 'resource'} id (uuid) is needed, e.g. payd ${what} 0c5a81bb-…`);
  return id;
};
const amountOpt = (v: unknown) => {
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || !/^[1-9]\d{0,13}$/.test(v)) throw new CliError('--amount: an amount in minor units (1050 is 10.50 EUR, 1000 is ¥1,000)');
  return Number(v);
};
const limitOpt = (v: unknown) => {
  if (v === undefined) return '20';
  if (typeof v !== 'string' || !/^(100|[1-9]\d?)$/.test(v)) throw new CliError('--limit: 1 to 100');
  return v;
};

export async function payments(argv: string[], env: NodeJS.ProcessEnv, out: (line: string) => void): Promise<void> {
  const [action, ...rest] = argv;
  const { values, positionals } = parseArgs({
    args: rest, allowPositionals: true,
    options: { ...COMMON, limit: { type: 'string' }, status: { type: 'string' }, amount: { type: 'string' }, 'idempotency-key': { type: 'string' }, reference: { type: 'string' } },
  });
  const api = new Api(conn(values, env));
  switch (action) {
    case 'list': {
      const q = new URLSearchParams({ limit: limitOpt(values.limit) });
      if (values.status) q.set('authorization_status', String(values.status));
      if (values.reference) q.set('order_reference', String(values.reference));
      const page = await api.call<Page<PaymentItem>>('GET', `/v2/payments?${q}`);
      if (values.json) return out(JSON.stringify(page, null, 2));
      for (const p of page.data) {
        out(`${p.id}  ${p.created_at.slice(0, 19).replace('T', ' ')}  ${p.amount} ${p.currency}  ${p.authorization.status}  captured ${p.amounts.total_captured} refunded ${p.amounts.total_refunded} voided ${p.amounts.total_voided}${p.order_reference ? `  ${p.order_reference}` : ''}`);
      }
      if (page.has_more) out('(more: GET /v2/payments?starting_after=' + page.next_cursor + ')');
      return;
    }
    case 'get':
      return out(JSON.stringify(await api.call('GET', `/v2/payments/${idOf(positionals, 'payments get')}`), null, 2));
    case 'capture': case 'refund': case 'void': {
      const id = idOf(positionals, `payments ${action}`);
      const amount = amountOpt(values.amount);
      if (action === 'capture' && amount === undefined) throw new CliError('payments capture: --amount (minor units) is needed');
      const key = (values['idempotency-key'] as string | undefined) ?? randomUUID();
      out(`idempotency key ${key} (retry a lost answer with --idempotency-key ${key})`);
      const path = `/v2/payments/${id}/${action === 'capture' ? 'captures' : action === 'refund' ? 'refunds' : 'voids'}`;
      const payment = await api.call<PaymentItem>('POST', path, amount === undefined ? {} : { amount }, key);
      return out(`${action} asked: payment ${payment.id} captured ${payment.amounts.total_captured} refunded ${payment.amounts.total_refunded} voided ${payment.amounts.total_voided} ${payment.currency}`);
    }
    default:
      throw new CliError(`payd payments <list|get|capture|refund|void> (got "${action ?? ''}")`);
  }
}

export async function events(argv: string[], env: NodeJS.ProcessEnv, out: (line: string) => void): Promise<void> {
  const [action, ...rest] = argv;
  const { values, positionals } = parseArgs({
    args: rest, allowPositionals: true,
    options: { ...COMMON, limit: { type: 'string' }, type: { type: 'string' }, 'webhook-endpoint': { type: 'string' }, 'idempotency-key': { type: 'string' } },
  });
  const api = new Api(conn(values, env));
  switch (action) {
    case 'list': {
      const q = new URLSearchParams({ limit: limitOpt(values.limit) });
      if (values.type) q.set('type', String(values.type));
      const page = await api.call<Page<EventItem>>('GET', `/v2/events?${q}`);
      if (values.json) return out(JSON.stringify(page, null, 2));
      for (const e of page.data) out(`${e.id}  ${e.created_at.slice(0, 19).replace('T', ' ')}  ${e.type}`);
      return;
    }
    case 'get':
      return out(JSON.stringify(await api.call('GET', `/v2/events/${idOf(positionals, 'events get')}`), null, 2));
    case 'resend': {
      const id = idOf(positionals, 'events resend');
      const endpoint = values['webhook-endpoint'];
      if (endpoint !== undefined && !UUID.test(String(endpoint))) throw new CliError('--webhook-endpoint: a webhook endpoint id (uuid)');
      const key = (values['idempotency-key'] as string | undefined) ?? randomUUID();
      out(`idempotency key ${key} (retry a lost answer with --idempotency-key ${key})`);
      const resent = await api.call<{ event_id: string; deliveries: Array<{ id: string; endpoint_id: string | null; url: string | null }> }>(
        'POST', `/v2/events/${id}/resend`, endpoint === undefined ? {} : { webhook_endpoint_id: endpoint }, key);
      if (values.json) return out(JSON.stringify(resent, null, 2));
      for (const d of resent.deliveries) out(`resent ${resent.event_id}: delivery ${d.id} to ${d.url ?? '(no URL)'}${d.endpoint_id ? ` (endpoint ${d.endpoint_id})` : ''}`);
      return;
    }
    default:
      throw new CliError(`payd events <list|get|resend> (got "${action ?? ''}"); to receive them as webhooks: payd listen`);
  }
}

interface EndpointItem { id: string; url: string; status: string; enabled_events: string[]; is_default: boolean; description: string | null; secret?: string }

/** --events a,b (comma list) as enabled_events. */
const eventsOpt = (v: unknown) => (typeof v === 'string' ? v.split(',').map((x) => x.trim()).filter(Boolean) : undefined);

export async function webhookEndpoints(argv: string[], env: NodeJS.ProcessEnv, out: (line: string) => void): Promise<void> {
  const [action, ...rest] = argv;
  const { values, positionals } = parseArgs({
    args: rest, allowPositionals: true,
    options: {
      ...COMMON, limit: { type: 'string' }, url: { type: 'string' }, events: { type: 'string' }, description: { type: 'string' },
      enable: { type: 'boolean' }, disable: { type: 'boolean' }, 'idempotency-key': { type: 'string' }, 'previous-valid-seconds': { type: 'string' },
    },
  });
  const api = new Api(conn(values, env));
  const line = (e: EndpointItem) => `${e.id}  ${e.status}  ${e.enabled_events.join(',')}  ${e.url}${e.is_default ? '  (default)' : ''}${e.description ? `  ${e.description}` : ''}`;
  switch (action) {
    case 'list': {
      const page = await api.call<Page<EndpointItem>>('GET', `/v2/webhook-endpoints?${new URLSearchParams({ limit: limitOpt(values.limit) })}`);
      if (values.json) return out(JSON.stringify(page, null, 2));
      for (const e of page.data) out(line(e));
      if (page.has_more) out('(more: GET /v2/webhook-endpoints?starting_after=' + page.next_cursor + ')');
      return;
    }
    case 'create': {
      if (typeof values.url !== 'string') throw new CliError('webhook-endpoints create: --url <https://...> is needed (--events a,b; default every type)');
      const key = (values['idempotency-key'] as string | undefined) ?? randomUUID();
      out(`idempotency key ${key} (retry a lost answer with --idempotency-key ${key})`);
      const created = await api.call<EndpointItem>('POST', '/v2/webhook-endpoints', {
        url: values.url, ...(values.events !== undefined ? { enabled_events: eventsOpt(values.events) } : {}),
        ...(values.description !== undefined ? { description: values.description } : {}), ...(values.disable ? { status: 'disabled' } : {}),
      }, key);
      if (values.json) return out(JSON.stringify(created, null, 2));
      out(line(created));
      return out(`signing secret (shown once): ${created.secret}`);
    }
    case 'get':
      return out(JSON.stringify(await api.call('GET', `/v2/webhook-endpoints/${idOf(positionals, 'webhook-endpoints get')}`), null, 2));
    case 'update': {
      const id = idOf(positionals, 'webhook-endpoints update');
      if (values.enable && values.disable) throw new CliError('webhook-endpoints update: --enable or --disable, not both');
      const body = {
        ...(values.url !== undefined ? { url: values.url } : {}), ...(values.events !== undefined ? { enabled_events: eventsOpt(values.events) } : {}),
        ...(values.description !== undefined ? { description: values.description } : {}),
        ...(values.enable ? { status: 'enabled' } : {}), ...(values.disable ? { status: 'disabled' } : {}),
      };
      if (Object.keys(body).length === 0) throw new CliError('webhook-endpoints update: give --url, --events, --description, --enable or --disable');
      const updated = await api.call<EndpointItem>('PATCH', `/v2/webhook-endpoints/${id}`, body);
      return out(values.json ? JSON.stringify(updated, null, 2) : line(updated));
    }
    case 'delete': {
      const id = idOf(positionals, 'webhook-endpoints delete');
      await api.call('DELETE', `/v2/webhook-endpoints/${id}`);
      return out(`deleted ${id}`);
    }
    case 'rotate': {
      const id = idOf(positionals, 'webhook-endpoints rotate');
      const seconds = values['previous-valid-seconds'];
      if (seconds !== undefined && !/^\d{1,6}$/.test(String(seconds))) throw new CliError('--previous-valid-seconds: 0 to 604800');
      const key = (values['idempotency-key'] as string | undefined) ?? randomUUID();
      const rotated = await api.call<{ secret: string; version: number; previous_expires_at: string | null }>('POST', `/v2/webhook-endpoints/${id}/secret/rotate`,
        seconds === undefined ? {} : { previous_secret_valid_seconds: Number(seconds) }, key);
      if (values.json) return out(JSON.stringify(rotated, null, 2));
      return out(`signing secret version ${rotated.version} (shown once): ${rotated.secret}${rotated.previous_expires_at ? `; the previous one signs too until ${rotated.previous_expires_at}` : ''}`);
    }
    case 'test': {
      const id = idOf(positionals, 'webhook-endpoints test');
      const key = (values['idempotency-key'] as string | undefined) ?? randomUUID();
      out(`idempotency key ${key} (retry a lost answer with --idempotency-key ${key})`);
      const sent = await api.call<{ id: string; delivery_id: string }>('POST', `/v2/webhook-endpoints/${id}/test`, undefined, key);
      return out(values.json ? JSON.stringify(sent, null, 2) : `test event ${sent.id} queued (delivery ${sent.delivery_id})`);
    }
    default:
      throw new CliError(`payd webhook-endpoints <list|create|get|update|delete|rotate|test> (got "${action ?? ''}")`);
  }
}
