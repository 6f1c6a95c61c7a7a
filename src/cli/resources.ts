// `payd payments …` and `payd events …`: a merchant's developer works with resources of a
// running payd from the shell, with an API key (--api-key or PAYD_API_KEY; --base-url or
// PAYD_URL), as the SDK does: every creating call carries an idempotency key (printed, so
// that a lost answer can be retried with --idempotency-key). Lists print one line per item
// (--json: the API's page as it is); a single resource prints as JSON.
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { Api, CliError, conn } from './dev.ts';

const COMMON = { 'api-key': { type: 'string' }, 'base-url': { type: 'string' }, json: { type: 'boolean' } } as const;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

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
  const { values, positionals } = parseArgs({ args: rest, allowPositionals: true, options: { ...COMMON, limit: { type: 'string' }, type: { type: 'string' } } });
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
    default:
      throw new CliError(`payd events <list|get> (got "${action ?? ''}"); to receive them as webhooks: payd listen`);
  }
}
