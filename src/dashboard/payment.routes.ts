// A payment's page (facts, split, partner transactions, timeline) and its money actions:
// capture, refund, void, each through OperationsService after a confirmation step, with an
// idempotency key made when the form was shown (a double click or a reload moves money once).
import type { FastifyInstance, FastifyReply } from 'fastify';
import { randomUUID } from 'node:crypto';
import { Type } from 'typebox';
import type { Db } from '../platform/db/index.ts';
import { isProblem, Problem, PROBLEM_TYPE } from '../platform/http/problem.ts';
import { StringEnum } from '../platform/http/schemas.ts';
import type { PaymentsService, PaymentViewT } from '../payments/payments.service.ts';
import type { OperationsService } from '../payments/operations.service.ts';
import type { OperationKind } from '../payments/payments.repo.ts';
import type { Reserved } from '../payments/amounts.ts';
import { OPERATIONS, OPERATION_NAMES, availableFor } from '../payments/transitions.ts';
import { exampleAmount, majorText } from '../payments/currency.ts';
import type { WebhooksService } from '../webhooks/webhooks.service.ts';
import { escapeHtml as e } from '../web/index.ts';
import type { DashboardAuth, Member } from './auth.routes.ts';
import { type Role, can, membersRepo } from './members.ts';
import { cardsOf } from './payments-csv.ts';
import { money, page, parseAmount, when } from './views.ts';
import { PaymentParams, UUID } from './params.ts';

/** What operations in flight (PENDING) reserve, per operation, as the Payment shows them. */
function reservedOfView(p: PaymentViewT): Reserved {
  const sum = (ops: Array<{ status: string; amount: number }>) => ops.filter((o) => o.status === 'PENDING').reduce((s, o) => s + o.amount, 0);
  return { capture: sum(p.captures), refund: sum(p.refunds), void: sum(p.voids) };
}

/** The action forms: one per operation of the table (transitions.ts), shown when the payment accepts it now. */
const ACTIONS: Record<string, { kind: OperationKind; path: string; verb: string; needs: Role; available: (p: PaymentViewT) => number }> = Object.fromEntries(
  OPERATION_NAMES.map((op) => [op, {
    kind: OPERATIONS[op].kind, path: OPERATIONS[op].path, verb: OPERATIONS[op].verb, needs: 'operator' as Role,
    available: (p: PaymentViewT) => availableFor(op, p.authorization.status, p.amounts, reservedOfView(p)),
  }]));

/** The payment, or undefined when the entity has none of that id. */
export async function storedPayment(payments: PaymentsService, entityId: string, id: string): Promise<PaymentViewT | undefined> {
  try {
    return await payments.getStored(entityId, id);
  } catch (err) {
    if (isProblem(err, PROBLEM_TYPE.notFound)) return undefined;
    throw err;
  }
}

export async function paymentRoutes(app: FastifyInstance, deps: { db: Db; payments: PaymentsService; operations: OperationsService; webhooks: WebhooksService; auth: DashboardAuth }) {
  const { member, csrfOk } = deps.auth;
  const stored = (entityId: string, id: string) => storedPayment(deps.payments, entityId, id);
  const detail = async (reply: FastifyReply, m: Member, p: PaymentViewT, notice?: string, error?: string, status = 200) => {
    const base = `/dashboard/${m.entity.entity_id}/payments/${p.id}`;
    const actions = await membersRepo.actionsOf(deps.db, m.entity.entity_id, p.id);
    const events = await deps.webhooks.eventsOf(m.entity.entity_id, p.id);
    const admin = can(m.entity.role, 'admin');
    const ops = [...p.captures.map((o) => ({ ...o, kind: 'Capture' })), ...p.refunds.map((o) => ({ ...o, kind: 'Refund' })), ...p.voids.map((o) => ({ ...o, kind: 'Void' }))];
    const iso = (d: string | Date) => new Date(d).toISOString();
    const timeline = [
      { at: iso(p.created_at), text: `Created: ${money(p.amount, p.currency)}, authorization ${p.authorization.status}` },
      ...ops.map((o) => ({ at: iso(o.created_at), text: `${o.kind} of ${money(o.amount, p.currency)}: ${o.status}` })),
      ...actions.map((a) => ({ at: a.created_at.toISOString(), text: `${a.action} of ${a.amount === null ? '' : money(a.amount, p.currency)} asked by ${a.user_email} (dashboard)` })),
      ...events.map((ev) => ({
        at: iso(ev.created_at),
        text: `Webhook ${ev.type}: ${ev.status === 'NO_DESTINATION' ? 'not sent (no endpoint)' : ev.status.toLowerCase()}${ev.deliveries.length > 1 ? ` (${ev.deliveries.length} deliveries)` : ''}`,
        href: admin ? `/dashboard/${m.entity.entity_id}/webhooks/${ev.id}` : undefined,
      })),
    ].sort((a, b) => Date.parse(a.at) - Date.parse(b.at)) as Array<{ at: string; text: string; href?: string | undefined }>;
    const txs = [...p.authorization.partner_transactions, ...ops.flatMap((o) => o.partner_transactions)];
    const form = (action: keyof typeof ACTIONS, withAmount: boolean) => {
      const a = ACTIONS[action]!;
      const available = a.available(p);
      if (!can(m.entity.role, a.needs) || available <= 0) return '';
      const id = `${action}-amount`;
      return `<form method="post" action="${base}/${action}" data-once>
<h3>${a.verb}</h3>
<input type="hidden" name="csrf" value="${e(m.csrf)}"><input type="hidden" name="idempotency_key" value="${randomUUID()}">
${withAmount ? `<label for="${id}">Amount (${e(p.currency)}), at most ${e(money(available, p.currency))}</label>
<input id="${id}" name="amount" inputmode="decimal" required value="${e(majorText(available, p.currency, false))}">` : `<p>Releases ${e(money(available, p.currency))} not captured.</p>`}
<button type="submit"${action === 'void' ? ' class="danger"' : ''}>${a.verb}…</button>
</form>`;
    };
    const forms = [form('capture', true), form('refund', true), form('void', false)].join('');
    // The card as the shopper knows it (network and last four; payd keeps no more of it).
    const cards = cardsOf(p).map((c) => `${c.network} •••• ${c.last_four}${c.expiry_month ? ` (expires ${c.expiry_month}/${String(c.expiry_year ?? '').slice(-2)})` : ''}`);
    return page(reply, status, { title: `Payment ${p.order_reference ?? p.id}`, email: m.email, csrf: m.csrf, memberships: m.memberships, entity: m.entity, current: 'payments' }, `
${notice ? `<p class="notice" role="status">${e(notice)}</p>` : ''}${error ? `<div class="error" role="alert">${e(error)}</div>` : ''}
<dl class="facts">
<dt>Payment</dt><dd><code>${e(p.id)}</code></dd>
<dt>Created</dt><dd>${e(when(p.created_at, m.entity.time_zone))}</dd>
<dt>Amount</dt><dd>${e(money(p.amount, p.currency))}</dd>
${cards.length ? `<dt>Card</dt><dd id="payment-card">${cards.map(e).join(', ')}</dd>` : ''}
<dt>Authorization</dt><dd class="status">${e(p.authorization.status)}</dd>
<dt>Captured</dt><dd>${e(money(p.amounts.total_captured, p.currency))} (${e(money(p.amounts.available_to_capture, p.currency))} left to capture)</dd>
<dt>Refunded</dt><dd>${e(money(p.amounts.total_refunded, p.currency))} (${e(money(p.amounts.available_to_refund, p.currency))} left to refund)</dd>
<dt>Voided</dt><dd>${e(money(p.amounts.total_voided, p.currency))}</dd>
<dt>Order</dt><dd>${e(p.order_reference ?? '—')}</dd>
</dl>
<h2>Split</h2>
<div class="table-wrap" role="region" tabindex="0" aria-label="Split (scrolls sideways on small screens)"><table aria-label="Split"><thead><tr><th scope="col">Partner</th><th scope="col">Method</th><th scope="col" class="num">Amount</th></tr></thead>
<tbody>${p.split.map((s) => `<tr><td>${e(s.partner)}</td><td>${e(s.method)}</td><td class="num">${e(money(s.amount, p.currency))}</td></tr>`).join('')}</tbody></table></div>
<h2>Partner transactions</h2>
<div class="table-wrap" role="region" tabindex="0" aria-label="Partner transactions (scrolls sideways on small screens)"><table aria-label="Partner transactions"><thead><tr><th scope="col">Partner</th><th scope="col">Status</th><th scope="col" class="num">Amount</th><th scope="col">Reference</th><th scope="col">Code</th></tr></thead>
<tbody>${txs.map((t) => `<tr><td>${e(t.partner)}</td><td>${e(t.status)}</td><td class="num">${e(money(t.amount, p.currency))}</td><td><code>${e(t.partner_reference ?? '—')}</code></td><td>${e(t.status_code ?? '')}</td></tr>`).join('')}</tbody></table></div>
<h2>Timeline</h2>
<ol class="timeline">${timeline.map((t) => `<li><time datetime="${e(t.at)}">${e(when(t.at, m.entity.time_zone))}</time>: ${t.href ? `<a href="${e(t.href)}">${e(t.text)}</a>` : e(t.text)}</li>`).join('')}</ol>
${forms ? `<h2>Actions</h2><div class="actions">${forms}</div>` : m.entity.role === 'viewer' ? '<p>Your role is read only.</p>' : ''}`);
  };

  app.get('/dashboard/:entity/payments/:id', { schema: { hide: true, params: PaymentParams } }, async (request, reply) => {
    const m = await member(request, reply);
    if (!m) return reply;
    const { id } = request.params as { id: string };
    const p = await stored(m.entity.entity_id, id);
    if (!p) return page(reply, 404, { title: 'Not found', email: m.email, csrf: m.csrf, memberships: m.memberships, entity: m.entity }, '<p>There is no such payment here.</p>');
    const { done, sent, declined, pending } = request.query as Record<string, unknown>;
    const known = (v: unknown): v is string => typeof v === 'string' && ACTIONS[v] !== undefined;
    // A declined operation is an error, never "done": the partner refused and nothing moved.
    if (known(declined)) {
      return detail(reply, m, p, undefined, `${ACTIONS[declined]!.verb} declined by the partner: nothing moved. The timeline below shows the partner's answer.`);
    }
    const notice = known(done) ? `${ACTIONS[done]!.verb} done.`
      : known(pending) ? `${ACTIONS[pending]!.verb} sent; the partner has not answered yet. The payment below shows where it stands.`
        : known(sent) ? `This ${sent} form was already sent once; nothing more was done. The payment below shows where it stands.` : undefined;
    return detail(reply, m, p, notice);
  });

  // Capture, refund, void: the form's post shows a confirmation; its confirmation moves the
  // money, once per form (the idempotency key was made when the form was shown).
  const ActionParams = Type.Object({ entity: Type.String({ pattern: UUID.source }), id: Type.String({ pattern: UUID.source }), action: StringEnum(Object.keys(ACTIONS)) });
  app.post('/dashboard/:entity/payments/:id/:action', {
    schema: { hide: true, params: ActionParams, body: Type.Record(Type.String(), Type.String({ maxLength: 200 })) },
  }, async (request, reply) => {
    const { id, action } = request.params as { id: string; action: string };
    const a = ACTIONS[action]!;
    const m = await member(request, reply, a.needs);
    if (!m) return reply;
    const body = request.body as Record<string, string>;
    if (!csrfOk(request, m)) return page(reply, 403, { title: 'Form expired', email: m.email, csrf: m.csrf, memberships: m.memberships, entity: m.entity }, '<p role="alert">The form expired or did not come from this dashboard. Go back and reload the payment.</p>');
    const p = await stored(m.entity.entity_id, id);
    if (!p) return page(reply, 404, { title: 'Not found', email: m.email, csrf: m.csrf, memberships: m.memberships, entity: m.entity }, '<p>There is no such payment here.</p>');
    const key = body.idempotency_key ?? '';
    if (!UUID.test(key)) return detail(reply, m, p, undefined, 'The form is incomplete: reload the payment.', 400);
    let amount: number | undefined;
    if (a.kind !== 'VOID') {
      amount = parseAmount(body.amount ?? '', p.currency);
      if (amount === undefined || amount <= 0) return detail(reply, m, p, undefined, `${a.verb}: write the amount in ${p.currency} like ${exampleAmount(p.currency)}.`, 400);
    }
    const base = `/dashboard/${m.entity.entity_id}/payments/${p.id}`;
    if (body.confirm !== 'yes') {
      return page(reply, 200, { title: `${a.verb} ${money(amount ?? a.available(p), p.currency)}?`, email: m.email, csrf: m.csrf, memberships: m.memberships, entity: m.entity, current: 'payments' }, `
<p>${e(a.verb)} ${amount === undefined ? `the ${e(money(a.available(p), p.currency))} not captured` : e(money(amount, p.currency))} of payment ${e(p.order_reference ?? p.id)}? This moves money at the partner and cannot be undone here.</p>
<form method="post" action="${base}/${action}" data-once class="confirm">
<input type="hidden" name="csrf" value="${e(m.csrf)}"><input type="hidden" name="idempotency_key" value="${e(key)}">
${amount === undefined ? '' : `<input type="hidden" name="amount" value="${e(body.amount!)}">`}<input type="hidden" name="confirm" value="yes">
<button type="submit"${a.kind === 'VOID' ? ' class="danger"' : ''}>Yes, ${e(a.verb.toLowerCase())}</button> <a href="${base}">No, go back</a>
</form>`);
    }
    // This form was sent already (a double click, a reload): its operation is done or under
    // way with this key; nothing more moves.
    if (await membersRepo.actionDone(deps.db, m.entity.entity_id, key)) return reply.redirect(`${base}?sent=${action}`, 303);
    let outcome: 'done' | 'declined' | 'pending';
    try {
      const result = await deps.operations.run(a.kind, m.entity.entity_id, p.id, amount === undefined ? {} : { amount }, {
        idempotencyKey: `dashboard:${key}`, instance: `/v2/payments/${p.id}/${a.path}`,
      });
      // The operation's own status says what happened: a 200 carries declined operations too.
      const op = [...result.payment.captures, ...result.payment.refunds, ...result.payment.voids].find((o) => o.id === result.operationId);
      outcome = op?.status === 'SUCCESS' ? 'done' : op?.status === 'FAILURE' ? 'declined' : 'pending';
      await membersRepo.recordAction(deps.db, {
        entity_id: m.entity.entity_id, user_id: m.userId, user_email: m.email, action: a.verb, payment_id: p.id, idempotency_key: key, amount: amount ?? a.available(p),
      });
    } catch (err) {
      // The same form's key at the API: its first post is in flight (a double click).
      if (isProblem(err, PROBLEM_TYPE.writeConflict, PROBLEM_TYPE.conflict)) return reply.redirect(`${base}?sent=${action}`, 303);
      if (err instanceof Problem && err.status < 500) {
        const now = (await stored(m.entity.entity_id, p.id)) ?? p;
        const params = (err.extra.invalid_params as Array<{ name: string; reason: string }> | undefined)?.map((x) => `${x.name} ${x.reason}`).join('; ');
        return detail(reply, m, now, undefined, `${a.verb} refused: ${params || err.detail || err.title}`, err.status);
      }
      throw err;
    }
    return reply.redirect(`${base}?${outcome}=${action}`, 303);
  });
}
