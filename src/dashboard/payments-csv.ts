// The CSV export of the payments list (docs/dashboard.md "CSV export"): the list's own
// filter and keyset query, streamed a page at a time; cells no spreadsheet runs as formulas.
import type { PaymentViewT } from '../payments/payments.service.ts';
import { pageOf, pageRequest, type PaymentListQueryT } from '../payments/lists.routes.ts';
import type { PageRequest } from '../payments/lists.repo.ts';
import { majorText } from '../money/currency.ts';
import { localSeconds } from './views.ts';

/** The cards of a payment as the shopper knows them (network and last four; payd keeps no more of them). */
export function cardsOf(p: PaymentViewT): Array<{ network: string; last_four: string; expiry_month?: string | undefined; expiry_year?: string | undefined }> {
  return p.authorization.partner_transactions.flatMap((t) => {
    const c = t.card as { selected_network?: string; last_four_digits?: string; expiry_month?: string; expiry_year?: string } | undefined;
    return c?.last_four_digits ? [{ network: c.selected_network ?? 'Card', last_four: c.last_four_digits, expiry_month: c.expiry_month, expiry_year: c.expiry_year }] : [];
  });
}

/** The CSV export: at most this many payments, read this many at a time. */
export const EXPORT_MAX = 100_000;
const EXPORT_PAGE = 500;

/**
 * A CSV cell that no spreadsheet runs as a formula: a cell starting with = + - @, a tab or
 * a carriage return gets a leading apostrophe (OWASP "CSV injection"); then RFC 4180 quoting.
 */
export function csvCell(value: string): string {
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}
const csvLine = (cells: string[]) => `${cells.map(csvCell).join(',')}\r\n`;

/** The export's columns (docs/dashboard.md "CSV export"): amounts in major units of the currency, and in minor units. */
const amountColumns = (name: string, of: (p: PaymentViewT) => number) => [
  { name, value: (p: PaymentViewT) => majorText(of(p), p.currency, false) },
  { name: `${name}_minor`, value: (p: PaymentViewT) => String(of(p)) },
];
/** A payment of a page as read: its view's JSON text and its customer's email (the view has no customer). */
export interface CsvRow { id: string; text: string; customer_email?: string | null | undefined }

const CSV_COLUMNS: Array<{ name: string; value: (p: PaymentViewT, zone: string, row: CsvRow) => string }> = [
  { name: 'id', value: (p) => p.id },
  { name: 'created_at', value: (p) => new Date(p.created_at).toISOString() },
  { name: 'created_local', value: (p, zone) => localSeconds(p.created_at, zone) },
  { name: 'time_zone', value: (_p, zone) => zone },
  { name: 'order_reference', value: (p) => p.order_reference ?? '' },
  { name: 'status', value: (p) => p.authorization.status },
  { name: 'methods', value: (p) => p.split.map((s) => s.method).join(' + ') },
  { name: 'partners', value: (p) => p.split.map((s) => s.partner).join(' + ') },
  { name: 'currency', value: (p) => p.currency },
  ...amountColumns('amount', (p) => p.amount),
  ...amountColumns('captured', (p) => p.amounts.total_captured),
  ...amountColumns('refunded', (p) => p.amounts.total_refunded),
  ...amountColumns('voided', (p) => p.amounts.total_voided),
  { name: 'card', value: (p) => cardsOf(p).map((c) => `${c.network} ${c.last_four}`).join(' + ') },
  // Last, so that the columns before keep their places for the sheets that read them.
  { name: 'customer_email', value: (_p, _zone, row) => row.customer_email ?? '' },
];

/**
 * The CSV export's lines (a header, then one line per payment): pages of `pageSize` read
 * by keyset after the last id sent (the list's own query and index, through `readPage`),
 * each yielded as it is read, so that memory holds one page; at most `max` payments.
 */
export async function* paymentsCsv(
  readPage: (req: PageRequest) => Promise<CsvRow[] | undefined>, filter: PaymentListQueryT, zone: string,
  { pageSize = EXPORT_PAGE, max = EXPORT_MAX } = {},
): AsyncGenerator<string> {
  yield csvLine(CSV_COLUMNS.map((c) => c.name));
  let after: string | undefined;
  for (let sent = 0; sent < max;) {
    const req = pageRequest({ ...filter, limit: String(Math.min(pageSize, max - sent)), ...(after ? { starting_after: after } : {}) });
    const texts = await readPage(req);
    const rows = texts ? pageOf(texts, req) : { items: [], has_more: false };
    if (rows.items.length === 0) return;
    yield rows.items.map((i) => {
      const p = JSON.parse(i.text) as PaymentViewT;
      return csvLine(CSV_COLUMNS.map((c) => c.value(p, zone, i)));
    }).join('');
    sent += rows.items.length;
    if (!rows.has_more) return;
    after = rows.items[rows.items.length - 1]!.id;
  }
}

