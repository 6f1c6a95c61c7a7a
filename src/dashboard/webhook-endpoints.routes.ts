// The Webhooks page (admins): the entity's endpoints (every one, the deprecated default
// one included), the form that adds one (URL and event types; its signing secret shown
// once, in the answer), and the delivery log. The same WebhooksService as the API, so the
// same checks (the URL and its SSRF guard, the event types, the cap of 16): a refusal is
// said on the form, the draft kept.
import type { FastifyInstance, FastifyReply } from 'fastify';
import { isProblem, PROBLEM_TYPE } from '../platform/http/problem.ts';
import type { EventStatus } from '../webhooks/webhooks.service.ts';
import type { WebhooksService } from '../webhooks/webhooks.service.ts';
import { MAX_ENDPOINTS_PER_ENTITY } from '../webhooks/webhooks.service.ts';
import type { Member } from './links-keys.routes.ts';
import {
  actor, EntityParams, type Form, FormBody, isUuid, layout, list, type Message, problemText, refusal, refused, text,
  type WebhookRouteDeps,
} from './webhook-endpoints.common.tsx';
import { EVENT_STATUSES, type ShownSecret, WebhooksBody } from './webhook-endpoints.views.tsx';
import { page } from './views.ts';

const PAGE = 25;

export async function webhookEndpointListRoutes(app: FastifyInstance, deps: WebhookRouteDeps) {
  const listPage = async (reply: FastifyReply, m: Member, q: Record<string, unknown>, status = 200,
    message?: Message, extra?: { secret?: ShownSecret; draft?: { url: string; events: string[] } }) => {
    const entityId = m.entity.entity_id;
    const endpoints = (await deps.webhooks.listEndpoints(entityId, MAX_ENDPOINTS_PER_ENTITY)).data;
    const filter = typeof q.status === 'string' && EVENT_STATUSES.includes(q.status) ? q.status as EventStatus : undefined;
    const after = isUuid(q.after) ? q.after : undefined;
    let events: Awaited<ReturnType<WebhooksService['listEvents']>>;
    try {
      events = await deps.webhooks.listEvents(entityId, PAGE, { status: filter, after });
    } catch (err) {
      if (!isProblem(err, PROBLEM_TYPE.invalidRequest)) throw err; // a cursor of another entity: the first page
      events = await deps.webhooks.listEvents(entityId, PAGE, { status: filter });
    }
    return page(reply, status, layout(m, 'Webhooks'),
      WebhooksBody({ m, endpoints, events: events.data, filter, next: events.next_cursor, message, secret: extra?.secret, draft: extra?.draft }));
  };

  app.get('/dashboard/:entity/webhooks', { schema: { hide: true, params: EntityParams } }, async (request, reply) => {
    const m = await deps.member(request, reply, 'admin');
    if (!m) return reply;
    const q = request.query as Record<string, unknown>;
    const notice = q.saved === '1' ? 'The endpoint is saved.' : q.removed === '1' ? 'The endpoint is deleted: no new event goes to it.' : undefined;
    return listPage(reply, m, q, 200, notice ? { notice } : undefined);
  });

  app.post('/dashboard/:entity/webhooks/endpoints', { schema: { hide: true, params: EntityParams, body: FormBody } }, async (request, reply) => {
    const m = await deps.member(request, reply, 'admin');
    if (!m) return reply;
    if (!deps.csrfOk(request, m)) return refused(reply, m);
    const form = request.body as Form;
    const draft = { url: text(form, 'url').trim(), events: list(form, 'events') };
    const notSaved = (why: string, status: number) => listPage(reply, m, {}, status, { error: `The endpoint was not saved: ${why}` }, { draft });
    if (draft.events.length === 0) return notSaved('enabled_events must have at least 1 item: tick the event types to send, or All event types', 400);
    let created;
    try {
      created = await deps.webhooks.createEndpoint(m.entity.entity_id, { url: draft.url, enabled_events: draft.events });
    } catch (err) {
      const p = refusal(err);
      return notSaved(problemText(p), p.status);
    }
    await deps.actions.record(actor(m), `Add webhook endpoint ${created.url}`);
    return listPage(reply, m, {}, 201, undefined, {
      secret: { lead: `The endpoint is saved: ${created.url} receives the event types chosen. Its signing secret, shown this once: copy it now.`, secret: created.secret },
    });
  });
}
