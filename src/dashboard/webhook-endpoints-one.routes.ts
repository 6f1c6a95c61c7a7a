// One webhook endpoint's page (admins): change its event types and status, rotate its
// signing secret (the new one shown once, the previous one signing 24 hours more), send
// it a test event (then its event page), delete it after a confirmation that names its
// URL. Another entity's endpoint is a 404, as an id that does not exist.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { EndpointRow } from '../webhooks/webhooks.service.ts';
import type { Member } from './links-keys.routes.ts';
import {
  actor, base, EndpointParams, type Form, FormBody, layout, list, type Message, notFound, orNotFound, problemText, refusal, refused,
  ROTATION_OVERLAP_SECONDS, text, type WebhookRouteDeps,
} from './webhook-endpoints.common.tsx';
import { DeleteConfirm, EndpointPageBody, type ShownSecret } from './webhook-endpoints.views.tsx';
import { page, when } from './views.ts';

const STATUSES = ['enabled', 'disabled'] as const;

export async function webhookEndpointRoutes(app: FastifyInstance, deps: WebhookRouteDeps) {
  const opts = { schema: { hide: true, params: EndpointParams } };
  const postOpts = { schema: { hide: true, params: EndpointParams, body: FormBody } };
  const endpointOf = (m: Member, params: unknown) => orNotFound(deps.webhooks.getEndpointById(m.entity.entity_id, (params as { endpoint: string }).endpoint));
  const endpointPage = (reply: FastifyReply, m: Member, e: EndpointRow, status = 200, message?: Message,
    extra?: { secret?: ShownSecret; draft?: { events: string[]; status: string } }) =>
    page(reply, status, layout(m, 'Webhook endpoint'), EndpointPageBody({ m, e, message, secret: extra?.secret, draft: extra?.draft }));
  /**
   * Every handler's start: the member (an admin), the form's CSRF token on a POST, and the
   * entity's endpoint; undefined once the reply is sent (sign-in, refusal or 404).
   */
  const admitted = async (request: FastifyRequest, reply: FastifyReply): Promise<{ m: Member; e: EndpointRow } | undefined> => {
    const m = await deps.member(request, reply, 'admin');
    if (!m) return undefined;
    if (request.method === 'POST' && !deps.csrfOk(request, m)) {
      await refused(reply, m);
      return undefined;
    }
    const e = await endpointOf(m, request.params);
    if (!e) {
      await notFound(reply, m, 'endpoint');
      return undefined;
    }
    return { m, e };
  };

  app.get('/dashboard/:entity/webhooks/endpoints/:endpoint', opts, async (request, reply) => {
    const a = await admitted(request, reply);
    if (!a) return reply;
    const { m, e } = a;
    return endpointPage(reply, m, e, 200, (request.query as Record<string, unknown>).saved === '1' ? { notice: 'The endpoint is saved.' } : undefined);
  });

  app.post('/dashboard/:entity/webhooks/endpoints/:endpoint', postOpts, async (request, reply) => {
    const a = await admitted(request, reply);
    if (!a) return reply;
    const { m, e } = a;
    const form = request.body as Form;
    const draft = { events: list(form, 'events'), status: text(form, 'status') };
    const notSaved = (why: string, status: number) => endpointPage(reply, m, e, status, { error: `The endpoint was not saved: ${why}` }, { draft });
    if (draft.events.length === 0) return notSaved('enabled_events must have at least 1 item: tick the event types to send, or All event types', 400);
    if (!(STATUSES as readonly string[]).includes(draft.status)) return notSaved('status must be enabled or disabled', 400);
    try {
      await deps.webhooks.updateEndpoint(m.entity.entity_id, e.id, { enabled_events: draft.events, status: draft.status as (typeof STATUSES)[number] });
    } catch (err) {
      const p = refusal(err);
      return notSaved(problemText(p), p.status);
    }
    await deps.actions.record(actor(m), `Change webhook endpoint ${e.url}`);
    return reply.redirect(`${base(m)}/endpoints/${e.id}?saved=1`, 303);
  });

  app.post('/dashboard/:entity/webhooks/endpoints/:endpoint/rotate', postOpts, async (request, reply) => {
    const a = await admitted(request, reply);
    if (!a) return reply;
    const { m, e } = a;
    const rotated = await orNotFound(deps.webhooks.rotateEndpointSecret(m.entity.entity_id, e.id, ROTATION_OVERLAP_SECONDS));
    if (!rotated) return notFound(reply, m, 'endpoint');
    await deps.actions.record(actor(m), `Rotate the signing secret of webhook endpoint ${e.url}`);
    const until = rotated.previous_expires_at ? ` The previous one also signs until ${when(rotated.previous_expires_at, m.entity.time_zone)} (24 hours), as a second signature, so that the receiver can switch.` : '';
    return endpointPage(reply, m, e, 200, undefined, { secret: { lead: `The new signing secret (version ${rotated.version}), shown this once: copy it now.${until}`, secret: rotated.secret } });
  });

  app.post('/dashboard/:entity/webhooks/endpoints/:endpoint/test', postOpts, async (request, reply) => {
    const a = await admitted(request, reply);
    if (!a) return reply;
    const { m, e } = a;
    const sent = await orNotFound(deps.webhooks.sendTestEvent(m.entity.entity_id, e.id));
    if (!sent) return notFound(reply, m, 'endpoint');
    await deps.actions.record(actor(m), `Send a test event to webhook endpoint ${e.url}`);
    return reply.redirect(`${base(m)}/${sent.id}?test=1`, 303);
  });

  app.get('/dashboard/:entity/webhooks/endpoints/:endpoint/delete', opts, async (request, reply) => {
    const a = await admitted(request, reply);
    if (!a) return reply;
    const { m, e } = a;
    return page(reply, 200, layout(m, 'Delete the endpoint?'), DeleteConfirm({ m, e }));
  });

  app.post('/dashboard/:entity/webhooks/endpoints/:endpoint/delete', postOpts, async (request, reply) => {
    const a = await admitted(request, reply);
    if (!a) return reply;
    const { m, e } = a;
    try {
      await deps.webhooks.deleteEndpointById(m.entity.entity_id, e.id);
    } catch (err) {
      refusal(err); // a 404: deleted meanwhile, which is what was asked
    }
    await deps.actions.record(actor(m), `Delete webhook endpoint ${e.url}`);
    return reply.redirect(`${base(m)}?removed=1`, 303);
  });
}
