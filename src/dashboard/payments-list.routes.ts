// The payments list (filters in the merchant's terms: amounts in major units, days in its
// time zone) and its CSV export.
import type { FastifyInstance } from 'fastify';
import { Readable } from 'node:stream';
import { AUTHORIZATION_STATUSES, CURRENCIES } from '../payments/common.schemas.ts';
import type { ReadRouter } from '../platform/db/reads.ts';
import type { PaymentsService, PaymentViewT } from '../payments/payments.service.ts';
import { pageOf, pageRequest, paymentListFilter, type PaymentListQueryT } from '../payments/lists.routes.ts';
import { exampleAmount } from '../payments/currency.ts';
import { METHOD_NAMES } from '../partners/methods.ts';
import { escapeHtml as e } from '../web/index.ts';
import type { DashboardAuth } from './auth.routes.ts';
import { EXPORT_MAX, paymentsCsv } from './payments-csv.ts';
import { addDays, dayIn, dayStart, money, page, parseAmount, when } from './views.ts';
import { EntityParams, UUID } from './params.ts';
import { storedPayment } from './payment.routes.ts';

// The filter offers the statuses a payment can have (no CANCELLED: no payment has it).
const STATUSES = AUTHORIZATION_STATUSES;

export async function paymentListRoutes(app: FastifyInstance, deps: { reads: ReadRouter; payments: PaymentsService; auth: DashboardAuth }) {
  const { member, staleOk } = deps.auth;
  const stored = (entityId: string, id: string) => storedPayment(deps.payments, entityId, id);
  /**
   * The list page's filters (and the CSV export's: the same query string), as the filter of
   * GET /v2/payments (paymentListFilter, lists.routes.ts); dates are days in the merchant's
   * time zone. A payment id in the search box is `open` (the page opens it).
   */
  const listQuery = (q: Record<string, string | undefined>, zone: string) => {
    const str = (k: string, max = 255) => (typeof q[k] === 'string' && q[k]!.trim() !== '' && q[k]!.length <= max ? q[k]!.trim() : undefined);
    const problems: string[] = [];
    const filter: PaymentListQueryT = {};
    const status = str('status');
    if (status && (STATUSES as readonly string[]).includes(status)) filter.authorization_status = status;
    // One search box: a payment id opens that payment; an email, four digits (a card's last
    // four) or anything else (an order reference) filter the list.
    const ref = str('order_reference');
    const open = ref && UUID.test(ref) ? ref.toLowerCase() : undefined;
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
    // The query string of these filters (pages and the export keep it).
    const keep = new URLSearchParams(Object.entries({ status, order_reference: ref, method, currency: filter.currency, amount_min: str('amount_min', 20), amount_max: str('amount_max', 20), from: str('from', 10), to: str('to', 10) })
      .filter((kv): kv is [string, string] => kv[1] !== undefined));
    return { filter, problems, keep, open, str };
  };

  app.get('/dashboard/:entity/payments', { schema: { hide: true, params: EntityParams } }, async (request, reply) => {
    const m = await member(request, reply);
    if (!m) return reply;
    const { filter, problems, keep, open, str } = listQuery(request.query as Record<string, string | undefined>, m.entity.time_zone);
    if (open) {
      const p = await stored(m.entity.entity_id, open);
      if (p) return reply.redirect(`/dashboard/${m.entity.entity_id}/payments/${p.id}`, 303);
    }
    const { authorization_status: status, method } = filter;
    const after = str('after', 36);
    const before = str('before', 36);
    if (after && UUID.test(after)) filter.starting_after = after;
    else if (before && UUID.test(before)) filter.ending_before = before;
    let rowsHtml = '';
    let pager = '';
    if (problems.length === 0) {
      let req;
      try {
        req = pageRequest({ ...filter, limit: '25' });
      } catch {
        problems.push('To must be after From.');
      }
      if (req) {
        const texts = await deps.reads.read(staleOk(request), (db) => deps.payments.listStoredJson(m.entity.entity_id, req!, paymentListFilter(filter), db));
        const pageRows = texts ? pageOf(texts, req) : { items: [], has_more: false, next_cursor: null };
        const items = pageRows.items.map((i) => JSON.parse(i.text) as PaymentViewT);
        const base = `/dashboard/${m.entity.entity_id}/payments`;
        rowsHtml = items.map((p) => `<tr>
<td>${e(when(p.created_at, m.entity.time_zone))}</td><td><a href="${base}/${e(p.id)}">${e(p.order_reference ?? p.id.slice(0, 8))}</a></td>
<td class="num">${e(money(p.amount, p.currency))}</td><td class="status">${e(p.authorization.status)}</td>
<td>${e(p.split.map((s) => s.method).join(' + '))}</td><td class="num">${e(money(p.amounts.total_captured, p.currency))}</td><td class="num">${e(money(p.amounts.total_refunded, p.currency))}</td></tr>`).join('');
        const link = (k: string, v: string, label: string) => `<a href="${base}?${new URLSearchParams([...keep, [k, v]])}" rel="${k === 'after' ? 'next' : 'prev'}">${label}</a>`;
        const goingBack = !!filter.ending_before;
        const newer = items.length && (goingBack ? pageRows.has_more : !!filter.starting_after) ? link('before', items[0]!.id, 'Newer') : '';
        const older = items.length && (goingBack || pageRows.has_more) ? link('after', items[items.length - 1]!.id, 'Older') : '';
        pager = `<nav class="pager" aria-label="Pages">${newer}${older}</nav>`;
      }
    }
    const opt = (v: string, label: string, current?: string) => `<option value="${e(v)}"${current === v ? ' selected' : ''}>${e(label)}</option>`;
    const field = (id: string, label: string, type = 'text', extra = '') =>
      `<div><label for="${id}">${label}</label><input id="${id}" name="${id}" type="${type}" value="${e(str(id) ?? '')}"${extra}></div>`;
    return page(reply, 200, { title: 'Payments', email: m.email, csrf: m.csrf, memberships: m.memberships, entity: m.entity, current: 'payments' }, `
<form method="get" class="filters" role="search" aria-label="Find payments">
${field('order_reference', 'Search (order reference, payment id, email, last four digits)')}
<div><label for="status">Status</label><select id="status" name="status">${opt('', 'Any')}${STATUSES.map((s) => opt(s, s.charAt(0) + s.slice(1).toLowerCase(), status)).join('')}</select></div>
<div><label for="method">Method</label><select id="method" name="method">${opt('', 'Any')}${METHOD_NAMES.map((x) => opt(x, x, method)).join('')}</select></div>
<div><label for="currency">Currency</label><select id="currency" name="currency">${opt('', 'Any')}${CURRENCIES.map((x) => opt(x, x, filter.currency)).join('')}</select></div>
${field('amount_min', 'Amount from', 'text', ' inputmode="decimal" placeholder="0.00"')}
${field('amount_max', 'Amount to', 'text', ' inputmode="decimal" placeholder="0.00"')}
${field('from', 'Created from', 'date')}
${field('to', 'Created to', 'date')}
<div><button type="submit">Search</button></div>
</form>
${problems.length ? `<div class="error" role="alert"><ul>${problems.map((p) => `<li>${e(p)}</li>`).join('')}</ul></div>` : ''}
<div class="table-wrap" role="region" tabindex="0" aria-label="Payments (scrolls sideways on small screens)"><table aria-label="Payments">
<thead><tr><th scope="col">Created</th><th scope="col">Order</th><th scope="col" class="num">Amount</th><th scope="col">Status</th><th scope="col">Method</th><th scope="col" class="num">Captured</th><th scope="col" class="num">Refunded</th></tr></thead>
<tbody>${rowsHtml || '<tr><td colspan="7">No payment matches.</td></tr>'}</tbody></table></div>
${pager}
${problems.length ? '' : `<p><a href="/dashboard/${e(m.entity.entity_id)}/payments.csv${keep.size ? `?${e(keep.toString())}` : ''}" download>Download these payments (CSV)</a> <span class="hint">every page of this search, newest first, at most ${EXPORT_MAX.toLocaleString('en-US')}</span></p>`}`);
  });

  // ---- the CSV export of the list's search (docs/dashboard.md "CSV export") ----

  app.get('/dashboard/:entity/payments.csv', { schema: { hide: true, params: EntityParams } }, async (request, reply) => {
    const m = await member(request, reply);
    if (!m) return reply;
    const zone = m.entity.time_zone;
    const { filter, problems } = listQuery(request.query as Record<string, string | undefined>, zone);
    if (problems.length) {
      return page(reply, 400, { title: 'Export refused', email: m.email, csrf: m.csrf, memberships: m.memberships, entity: m.entity, current: 'payments' },
        `<div class="error" role="alert"><ul>${problems.map((p) => `<li>${e(p)}</li>`).join('')}</ul></div><p><a href="/dashboard/${e(m.entity.entity_id)}/payments">Back to the payments</a></p>`);
    }
    const where = paymentListFilter(filter);
    const lag = staleOk(request);
    const lines = paymentsCsv((req) => deps.reads.read(lag, (db) => deps.payments.listStoredJson(m.entity.entity_id, req, where, db)), filter, zone);
    const name = `payments-${dayIn(Date.now(), zone)}.csv`;
    return reply.header('content-type', 'text/csv; charset=utf-8').header('content-disposition', `attachment; filename="${name}"`)
      .header('cache-control', 'no-store').header('x-content-type-options', 'nosniff').send(Readable.from(lines));
  });

}
