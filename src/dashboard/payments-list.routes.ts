// The payments list (filters in the merchant's terms: amounts in major units, days in its
// time zone; payments-query.ts) and its CSV export.
import type { FastifyInstance } from 'fastify';
import { Readable } from 'node:stream';
import type { ReadRouter } from '../platform/db/reads.ts';
import { pageOf, pageRequest } from '../platform/http/lists.ts';
import type { PaymentsService, PaymentViewT } from '../payments/payments.service.ts';
import { paymentListFilter } from '../payments/lists.service.ts';
import type { DashboardAuth } from './auth.routes.ts';
import { paymentsCsv } from './payments-csv.ts';
import { dayIn, page } from './views.ts';
import { EntityParams, UUID } from './params.ts';
import { storedPayment } from './payment-actions.ts';
import { listQuery } from './payments-query.ts';
import { layoutOf } from './parts.tsx';
import { ExportRefused, PaymentsList, type PaymentsListProps } from './payments-list-page.tsx';

export async function paymentListRoutes(app: FastifyInstance, deps: { reads: ReadRouter; payments: PaymentsService; auth: DashboardAuth }) {
  const { member, staleOk } = deps.auth;

  app.get('/dashboard/:entity/payments', { schema: { hide: true, params: EntityParams } }, async (request, reply) => {
    const m = await member(request, reply);
    if (!m) return reply;
    const entityId = m.entity.entity_id;
    const query = listQuery(request.query as Record<string, string | undefined>, m.entity.time_zone);
    const { filter, problems, keep, open, str } = query;
    if (open) {
      const p = await storedPayment(deps.payments, entityId, open);
      if (p) return reply.redirect(`/dashboard/${entityId}/payments/${p.id}`, 303);
    }
    const after = str('after', 36);
    const before = str('before', 36);
    if (after && UUID.test(after)) filter.starting_after = after;
    else if (before && UUID.test(before)) filter.ending_before = before;
    let payments: PaymentViewT[] = [];
    let pager: PaymentsListProps['pager'];
    if (problems.length === 0) {
      let req;
      try {
        req = pageRequest({ ...filter, limit: '25' });
      } catch {
        problems.push('To must be after From.');
      }
      if (req) {
        const texts = await deps.reads.read(staleOk(request), (db) => deps.payments.listStoredJson(entityId, req!, paymentListFilter(filter), db));
        const rows = texts ? pageOf(texts, req) : { items: [], has_more: false, next_cursor: null };
        payments = rows.items.map((i) => JSON.parse(i.text) as PaymentViewT);
        const link = (k: 'after' | 'before', v: string) => String(new URLSearchParams([...keep, [k, v]]));
        const goingBack = !!filter.ending_before;
        pager = {
          newer: payments.length && (goingBack ? rows.has_more : !!filter.starting_after) ? link('before', payments[0]!.id) : undefined,
          older: payments.length && (goingBack || rows.has_more) ? link('after', payments[payments.length - 1]!.id) : undefined,
        };
      }
    }
    return page(reply, 200, layoutOf(m, 'Payments', 'payments'), PaymentsList({ entityId, zone: m.entity.time_zone, query, payments, pager }));
  });

  // ---- the CSV export of the list's search (docs/dashboard.md "CSV export") ----

  app.get('/dashboard/:entity/payments.csv', { schema: { hide: true, params: EntityParams } }, async (request, reply) => {
    const m = await member(request, reply);
    if (!m) return reply;
    const zone = m.entity.time_zone;
    const { filter, problems } = listQuery(request.query as Record<string, string | undefined>, zone);
    if (problems.length) {
      return page(reply, 400, layoutOf(m, 'Export refused', 'payments'), ExportRefused({ entityId: m.entity.entity_id, problems }));
    }
    const where = paymentListFilter(filter);
    const lag = staleOk(request);
    const lines = paymentsCsv((req) => deps.reads.read(lag, (db) => deps.payments.listStoredJson(m.entity.entity_id, req, where, db)), filter, zone);
    const name = `payments-${dayIn(Date.now(), zone)}.csv`;
    return reply.header('content-type', 'text/csv; charset=utf-8').header('content-disposition', `attachment; filename="${name}"`)
      .header('cache-control', 'no-store').header('x-content-type-options', 'nosniff').send(Readable.from(lines));
  });
}
