// A payment's page and its money actions: capture, refund, void, each through
// OperationsService after a confirmation step, with an idempotency key made when the form
// was shown (a double click or a reload moves money once).
import type { FastifyInstance, FastifyReply } from 'fastify';
import { Type } from 'typebox';
import { isProblem, Problem, PROBLEM_TYPE } from '../platform/http/problem.ts';
import { StringEnum } from '../platform/http/schemas.ts';
import type { PaymentsService, PaymentViewT } from '../payments/payments.service.ts';
import type { OperationsService } from '../payments/operations.service.ts';
import { exampleAmount } from '../money/currency.ts';
import type { WebhooksService } from '../webhooks/webhooks.service.ts';
import type { DashboardAuth, Member } from './auth.routes.ts';
import type { DashboardService } from './dashboard.service.ts';
import { ACTIONS, storedPayment } from './payment-actions.ts';
import { ConfirmAction, PaymentDetail } from './payment-page.tsx';
import { formExpired, layoutOf, notFound } from './parts.tsx';
import { money, page, parseAmount } from './views.ts';
import { PaymentParams, UUID } from './params.ts';

export async function paymentRoutes(app: FastifyInstance, deps: { dashboard: DashboardService; payments: PaymentsService; operations: OperationsService; webhooks: WebhooksService; auth: DashboardAuth }) {
  const { member, csrfOk } = deps.auth;
  const stored = (entityId: string, id: string) => storedPayment(deps.payments, entityId, id);
  const detail = async (reply: FastifyReply, m: Member, p: PaymentViewT, notice?: string, error?: string, status = 200) => {
    const actions = await deps.dashboard.actionsOf(m.entity.entity_id, p.id);
    const events = await deps.webhooks.eventsOf(m.entity.entity_id, p.id);
    return page(reply, status, layoutOf(m, `Payment ${p.order_reference ?? p.id}`, 'payments'), PaymentDetail({ m, p, actions, events, notice, error }));
  };
  const noSuchPayment = (reply: FastifyReply, m: Member) => notFound(reply, m, 'There is no such payment here.');

  app.get('/dashboard/:entity/payments/:id', { schema: { hide: true, params: PaymentParams } }, async (request, reply) => {
    const m = await member(request, reply);
    if (!m) return reply;
    const { id } = request.params as { id: string };
    const p = await stored(m.entity.entity_id, id);
    if (!p) return noSuchPayment(reply, m);
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
    if (!csrfOk(request, m)) return formExpired(reply, m, undefined, 'Go back and reload the payment.');
    const p = await stored(m.entity.entity_id, id);
    if (!p) return noSuchPayment(reply, m);
    const key = body.idempotency_key ?? '';
    if (!UUID.test(key)) return detail(reply, m, p, undefined, 'The form is incomplete: reload the payment.', 400);
    let amount: number | undefined;
    if (a.kind !== 'VOID') {
      amount = parseAmount(body.amount ?? '', p.currency);
      if (amount === undefined || amount <= 0) return detail(reply, m, p, undefined, `${a.verb}: write the amount in ${p.currency} like ${exampleAmount(p.currency)}.`, 400);
    }
    const base = `/dashboard/${m.entity.entity_id}/payments/${p.id}`;
    if (body.confirm !== 'yes') {
      return page(reply, 200, layoutOf(m, `${a.verb} ${money(amount ?? a.available(p), p.currency)}?`, 'payments'),
        ConfirmAction({ m, p, action, amount, typed: body.amount, idempotencyKey: key }));
    }
    // This form was sent already (a double click, a reload): its operation is done or under
    // way with this key; nothing more moves.
    if (await deps.dashboard.actionDone(m.entity.entity_id, key)) return reply.redirect(`${base}?sent=${action}`, 303);
    let outcome: 'done' | 'declined' | 'pending';
    try {
      const result = await deps.operations.run(a.kind, m.entity.entity_id, p.id, amount === undefined ? {} : { amount }, {
        idempotencyKey: `dashboard:${key}`, instance: `/v2/payments/${p.id}/${a.path}`,
      });
      // The operation's own status says what happened: a 200 carries declined operations too.
      const op = [...result.payment.captures, ...result.payment.refunds, ...result.payment.voids].find((o) => o.id === result.operationId);
      outcome = op?.status === 'SUCCESS' ? 'done' : op?.status === 'FAILURE' ? 'declined' : 'pending';
      await deps.dashboard.recordAction({
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
