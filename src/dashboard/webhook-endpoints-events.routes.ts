// A webhook event's page (admins): the request as sent and each delivery with every
// attempt's answer, and Replay, once per form (the form's key is recorded in the same
// transaction as the new delivery; a refused replay records nothing). The page's body:
// EventBody (webhook-endpoints.views.tsx).
import type { FastifyInstance, FastifyReply } from 'fastify';
import { isProblem, PROBLEM_TYPE } from '../platform/http/problem.ts';
import type { Member } from './links-keys.routes.ts';
import {
  actor, base, EventParams, type Form, FormBody, isUuid, layout, type Message, notFound, orNotFound, problemText, refusal, refused,
  text, type WebhookRouteDeps,
} from './webhook-endpoints.common.tsx';
import { EventBody } from './webhook-endpoints.views.tsx';
import { page } from './views.ts';

export async function webhookEventRoutes(app: FastifyInstance, deps: WebhookRouteDeps) {
  const eventPage = async (reply: FastifyReply, m: Member, eventId: string, message?: Message, status = 200) => {
    const ev = await orNotFound(deps.webhooks.getEvent(m.entity.entity_id, eventId));
    if (!ev) return notFound(reply, m);
    return page(reply, status, layout(m, `Event ${ev.type}`), EventBody({ m, ev, message }));
  };

  app.get('/dashboard/:entity/webhooks/:event', { schema: { hide: true, params: EventParams } }, async (request, reply) => {
    const m = await deps.member(request, reply, 'admin');
    if (!m) return reply;
    const q = request.query as Record<string, unknown>;
    const notice = q.replayed === '1' ? 'Replayed: a new delivery is on its way.'
      : q.replayed === 'already' ? 'This replay form was already sent once; nothing more was done.'
        : q.test === '1' ? 'The test event is made: its delivery to the endpoint is below.' : undefined;
    return eventPage(reply, m, (request.params as { event: string }).event, notice ? { notice } : undefined);
  });

  app.post('/dashboard/:entity/webhooks/:event/replay', { schema: { hide: true, params: EventParams, body: FormBody } }, async (request, reply) => {
    const m = await deps.member(request, reply, 'admin');
    if (!m) return reply;
    if (!deps.csrfOk(request, m)) return refused(reply, m);
    const eventId = (request.params as { event: string }).event;
    const key = text(request.body as Form, 'form_key');
    if (!isUuid(key)) return eventPage(reply, m, eventId, { error: 'The form is incomplete: reload the page.' }, 400);
    let delivery;
    try {
      delivery = await deps.webhooks.replay(m.entity.entity_id, eventId, (tx) => deps.actions.record(actor(m), 'Replay webhook', { key, q: tx }));
    } catch (err) {
      if (isProblem(err, PROBLEM_TYPE.notFound)) return notFound(reply, m);
      const p = refusal(err);
      return eventPage(reply, m, eventId, { error: `Not replayed: ${problemText(p)}` }, p.status);
    }
    return reply.redirect(`${base(m)}/${eventId}?replayed=${delivery ? '1' : 'already'}`, 303);
  });
}
