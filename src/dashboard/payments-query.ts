// The payments list's search (and the CSV export's: the same query string) in the merchant's
// terms, as the filter of GET /v2/payments (paymentListFilter): amounts typed in major units
// of one currency, days in the merchant's time zone; a payment id in the search box is
// `open` (the page opens that payment). Each problem names its field.
import { AUTHORIZATION_STATUSES, CURRENCIES } from '../payments/common.schemas.ts';
import type { PaymentListQueryT } from '../payments/lists.schemas.ts';
import { exampleAmount } from '../money/currency.ts';
import { addDays, dayStart, parseAmount } from './views.ts';
import { UUID } from './params.ts';

// The filter offers the statuses a payment can have (no CANCELLED: no payment has it).
export const STATUSES = AUTHORIZATION_STATUSES;

export interface ListQuery {
  filter: PaymentListQueryT;
  problems: string[];
  /** The query string of these filters (pages and the export keep it). */
  keep: URLSearchParams;
  open: string | undefined;
  /** A field of the query as typed (trimmed; undefined when empty or longer than max). */
  str: (k: string, max?: number) => string | undefined;
}

export function listQuery(q: Record<string, string | undefined>, zone: string): ListQuery {
  const str = (k: string, max = 255) => (typeof q[k] === 'string' && q[k]!.trim() !== '' && q[k]!.length <= max ? q[k]!.trim() : undefined);
  const problems: string[] = [];
  const filter: PaymentListQueryT = {};
  const status = str('status');
  if (status && (STATUSES as readonly string[]).includes(status)) filter.authorization_status = status;
  // One search box: a payment id opens that payment; an email, four digits (a card's last
  // four) or anything else (an order reference) filter the list.
  const ref = str('order_reference');
  // (An id in capitals, as some tools copy it, opens the payment too.)
  const open = ref && UUID.test(ref.toLowerCase()) ? ref.toLowerCase() : undefined;
  if (ref && /^\d{4}$/.test(ref)) filter.card_last_four = ref;
  else if (ref && ref.includes('@')) filter.customer_email = ref;
  else if (ref) filter.order_reference = ref;
  const method = str('method', 64);
  if (method) filter.method = method;
  // Amounts are typed in major units of one currency (¥1,000 is 1000, €10.00 is 10.00): with amounts, a currency is needed.
  const currency = str('currency', 3);
  if (currency && CURRENCIES.includes(currency)) filter.currency = currency;
  for (const [field, key] of [['amount_min', 'amount_gte'], ['amount_max', 'amount_lte']] as const) {
    const v = str(field, 20);
    if (v === undefined) continue;
    const label = field === 'amount_min' ? 'Amount from' : 'Amount to';
    if (!filter.currency) {
      problems.push(`${label}: choose the currency the amount is in.`);
      continue;
    }
    const minor = parseAmount(v, filter.currency);
    if (minor === undefined) problems.push(`${label}: write it in ${filter.currency} like ${exampleAmount(filter.currency)}.`);
    else filter[key] = String(minor);
  }
  if (filter.amount_gte && filter.amount_lte && Number(filter.amount_gte) > Number(filter.amount_lte)) problems.push('Amount to must not be less than Amount from.');
  for (const [field, key, shift] of [['from', 'created_gte', 0], ['to', 'created_lt', 1]] as const) {
    const v = str(field, 10);
    if (v === undefined) continue;
    if (!/^\d{4}-\d{2}-\d{2}$/.test(v) || Number.isNaN(Date.parse(v))) problems.push(`${field === 'from' ? 'From' : 'To'}: a date such as 2026-11-24.`);
    else filter[key] = dayStart(addDays(v, shift), zone).toISOString();
  }
  if (filter.created_gte && filter.created_lt && filter.created_gte >= filter.created_lt) problems.push('To must be after From.');
  const keep = new URLSearchParams(Object.entries({ status, order_reference: ref, method, currency: filter.currency, amount_min: str('amount_min', 20), amount_max: str('amount_max', 20), from: str('from', 10), to: str('to', 10) })
    .filter((kv): kv is [string, string] => kv[1] !== undefined));
  return { filter, problems, keep, open, str };
}
