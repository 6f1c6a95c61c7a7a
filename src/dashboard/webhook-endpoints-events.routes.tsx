// A webhook event's page (admins): the request as sent and each delivery with every
// attempt's answer, and Replay, once per form (the form's key is recorded in the same
// transaction as the new delivery; a refused replay records nothing).
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { CsrfField } from '../web/index.ts';
import { isProblem, PROBLEM_TYPE } from '../platform/http/problem.ts';
import { envelope } from '../webhooks/dispatcher.ts';
import { SIGNATURE_HEADER } from '../webhooks/signature.ts';
import type { Member } from './links-keys.routes.ts';
import {
  actor, base, EventParams, type Form, FormBody, isUuid, layout, type Message, Messages, notFound, orNotFound, problemText, refusal, refused,
  statusLabel, text, type WebhookRouteDeps,
} from './webhook-endpoints.common.tsx';
import { page, when } from './views.ts';

export async function webhookEventRoutes(app: FastifyInstance, deps: WebhookRouteDeps) {
  const eventPage = async (reply: FastifyReply, m: Member, eventId: string, message?: Message, status = 200) => {
    const ev = await orNotFound(deps.webhooks.getEvent(m.entity.entity_id, eventId));
    if (!ev) return notFound(reply, m);
    const zone = m.entity.time_zone;
    const body = JSON.stringify(JSON.parse(envelope({ event_id: ev.id, type: ev.type, event_created_at: ev.created_at, entity_id: ev.entity_id, data: ev.data })), null, 2);
    const at = `${base(m)}/${ev.id}`;
    return page(reply, status, layout(m, `Event ${ev.type}`), (
      <>
        <Messages message={message} />
        <p><a href={base(m)}>All events</a></p>
        <dl class="facts">
          <dt>Event</dt><dd><code>{ev.id}</code></dd><dt>Type</dt><dd>{ev.type}</dd><dt>Created</dt><dd>{when(ev.created_at, zone)}</dd>
          <dt>Status</dt><dd class="status">{statusLabel(ev.status)}</dd>
          <dt>Sent to</dt><dd>{ev.target === 'EVENT' ? 'the payment link\'s own webhook' : 'the entity\'s endpoints that take its type'}</dd>
        </dl>
        <form method="post" action={`${at}/replay`} data-once>
          <CsrfField token={m.csrf} /><input type="hidden" name="form_key" value={randomUUID()} />
          <button type="submit">Replay this event</button> <span class="hint">Sends the same event (same id and body) once more, now.</span>
        </form>
        <h2>Request</h2>
        <p><code>POST</code> with <code>content-type: application/json</code>, <code>{SIGNATURE_HEADER}</code> (computed at each attempt) and this body:</p>
        <pre class="payload" tabindex={0} aria-label="Request body">{body}</pre>
        <h2>Deliveries</h2>
        {ev.deliveries.length === 0 ? <p>No delivery: there was no destination when the event was made. Add an endpoint, then replay it.</p> : ev.deliveries.map((d, i) => (
          <section aria-labelledby={`delivery-${i}`}>
            <h3 id={`delivery-${i}`}>{d.reason === 'REPLAY' ? 'Replay' : 'Delivery'} of {when(d.created_at, zone)}: {statusLabel(d.status)}</h3>
            <p>To <code>{d.url ?? 'no destination'}</code>{d.header_names.length ? <>, with the headers {d.header_names.map((n, j) => <>{j ? ', ' : ''}<code>{n}</code></>)}</> : null}.
              {d.next_attempt_at ? ` Next attempt ${when(d.next_attempt_at, zone)}.` : ''}</p>
            <div class="table-wrap" role="region" tabindex={0} aria-label="Attempts (scrolls sideways on small screens)">
              <table aria-label="Attempts">
                <thead><tr><th scope="col">#</th><th scope="col">Sent</th><th scope="col">Answer</th><th scope="col" class="num">Time</th><th scope="col">Response body</th></tr></thead>
                <tbody>
                  {(d.attempts ?? []).length === 0 ? <tr><td colSpan={5}>No attempt yet.</td></tr> : (d.attempts ?? []).map((a) => (
                    <tr><td>{a.number}</td><td>{when(a.started_at, zone)}</td><td>{a.status_code ?? a.error ?? '—'}</td><td class="num">{a.duration_ms} ms</td><td><pre>{a.response_body ?? ''}</pre></td></tr>
                  ))}
                </tbody>
              </table>
            </div>
          </section>
        ))}
      </>
    ));
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
