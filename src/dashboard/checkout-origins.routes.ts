// The Checkout origins page (admins; docs/dashboard.md): the sites whose pages may embed
// this merchant's card frame and 3-D Secure frame (the entity's checkout_origins, the
// frames' CSP frame-ancestors, migration 0052). List, add one (checked as PATCH
// /admin/v1/entities/{id} checks each origin: EntitiesService.addCheckoutOrigin), remove
// one. Each change is recorded with the admin's email. The page's body:
// checkout-origins-page.tsx.
import type { FastifyInstance, FastifyReply } from 'fastify';
import { Type } from 'typebox';
import { Problem } from '../platform/http/problem.ts';
import type { DashboardService } from './dashboard.service.ts';
import type { EntitiesService } from '../admin/entities.service.ts';
import type { ExtraDeps, Member } from './links-keys.routes.ts';
import { page } from './views.ts';
import { EntityParams } from './params.ts';
import { formExpired, layoutOf } from './parts.tsx';
import { CheckoutOriginsBody } from './checkout-origins-page.tsx';

export interface CheckoutOriginsDeps extends Pick<ExtraDeps, 'member' | 'csrfOk'> {
  dashboard: DashboardService;
  entities: EntitiesService;
}

const params = EntityParams;
const body = Type.Record(Type.String(), Type.String({ maxLength: 2048 }));
const FIELD = 'origin';

export async function checkoutOriginsPageRoutes(app: FastifyInstance, deps: CheckoutOriginsDeps) {
  const record = (m: Member, action: string) => deps.dashboard.recordAction({
    entity_id: m.entity.entity_id, user_id: m.userId, user_email: m.email, action, payment_id: null, idempotency_key: null, amount: null,
  });
  const show = async (reply: FastifyReply, m: Member, status = 200, message?: { notice?: string; error?: string }, draft = '') => {
    const entity = await deps.entities.get(m.entity.entity_id);
    return page(reply, status, layoutOf(m, 'Checkout origins', 'checkout'), CheckoutOriginsBody({ m, origins: entity.checkout_origins, draft, message }));
  };
  const refused = (reply: FastifyReply, m: Member) => formExpired(reply, m, 'checkout');

  app.get('/dashboard/:entity/checkout-origins', { schema: { hide: true, params } }, async (request, reply) => {
    const m = await deps.member(request, reply, 'admin');
    if (!m) return reply;
    const q = request.query as Record<string, unknown>;
    const notice = q.added === '1' ? 'The origin is added: its pages may embed the checkout\'s frames.'
      : q.removed === '1' ? 'The origin is removed: its pages may no longer embed the checkout\'s frames.' : undefined;
    return show(reply, m, 200, notice ? { notice } : undefined);
  });

  app.post('/dashboard/:entity/checkout-origins', { schema: { hide: true, params, body } }, async (request, reply) => {
    const m = await deps.member(request, reply, 'admin');
    if (!m) return reply;
    if (!deps.csrfOk(request, m)) return refused(reply, m);
    const text = (request.body as Record<string, string>)[FIELD] ?? '';
    let added;
    try {
      added = await deps.entities.addCheckoutOrigin(m.entity.entity_id, text, FIELD);
    } catch (err) {
      if (!(err instanceof Problem) || err.status >= 500) throw err;
      const why = (err.extra.invalid_params as Array<{ name: string; reason: string }> | undefined)?.map((p) => `Origin: ${p.reason}`).join('; ');
      return show(reply, m, err.status, { error: `The origin was not added. ${why || err.detail || err.title}` }, text);
    }
    if (added.added) await record(m, `Add checkout origin ${added.origin}`);
    return reply.redirect(`/dashboard/${m.entity.entity_id}/checkout-origins?added=1`, 303);
  });

  app.post('/dashboard/:entity/checkout-origins/remove', { schema: { hide: true, params, body } }, async (request, reply) => {
    const m = await deps.member(request, reply, 'admin');
    if (!m) return reply;
    if (!deps.csrfOk(request, m)) return refused(reply, m);
    const origin = (request.body as Record<string, string>)[FIELD] ?? '';
    const removed = await deps.entities.removeCheckoutOrigin(m.entity.entity_id, origin);
    if (removed.removed) await record(m, `Remove checkout origin ${origin}`);
    return reply.redirect(`/dashboard/${m.entity.entity_id}/checkout-origins?removed=1`, 303);
  });
}
