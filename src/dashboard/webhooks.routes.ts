// Dashboard webhook pages (admins): the entity's endpoint (set, remove, rotate the signing
// secret: a new secret is shown once), the delivery log (events newest first, filtered by
// status), an event's request and each attempt's response, and Replay, once per form (the
// form's key is recorded in the same transaction as the new delivery). The same
// WebhooksService as the operator API.
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { Type } from 'typebox';
import type { Db } from '../platform/db/index.ts';
import { isProblem, Problem, PROBLEM_TYPE } from '../platform/http/problem.ts';
import { escapeHtml as e } from '../checkout/pages.ts';
import type { WebhooksService } from '../webhooks/webhooks.service.ts';
import { envelope } from '../webhooks/dispatcher.ts';
import { SIGNATURE_HEADER } from '../webhooks/signature.ts';
import type { EventStatus } from '../webhooks/events.repo.ts';
import { membersRepo } from './members.ts';
import type { ExtraDeps, Member } from './links-keys.routes.ts';
import { page, when } from './views.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const STATUSES: EventStatus[] = ['PENDING', 'DELIVERED', 'FAILED', 'NO_DESTINATION'];
const PAGE = 25;
/** How long the previous signing secret still signs after a rotation from the dashboard. */
const ROTATION_OVERLAP_SECONDS = 24 * 3600;

export interface WebhookPageDeps extends Pick<ExtraDeps, 'member' | 'csrfOk'> {
  db: Db;
  webhooks: WebhooksService;
}

const statusLabel = (s: string) => s.charAt(0) + s.slice(1).toLowerCase().replace(/_/g, ' ');

export async function webhookPageRoutes(app: FastifyInstance, deps: WebhookPageDeps) {
  const params = Type.Object({ entity: Type.String({ pattern: UUID.source }) });
  const withEvent = Type.Object({ entity: Type.String({ pattern: UUID.source }), event: Type.String({ pattern: UUID.source }) });
  const form = Type.Record(Type.String(), Type.String({ maxLength: 2048 }));
  const layout = (m: Member, title: string) => ({ title, email: m.email, csrf: m.csrf, memberships: m.memberships, entity: m.entity, current: 'webhooks' as const });
  const refused = (reply: FastifyReply, m: Member) => page(reply, 403, layout(m, 'Form expired'),
    '<p role="alert">The form expired or did not come from this dashboard. Reload the page and try again.</p>');
  const notFound = (reply: FastifyReply, m: Member) => page(reply, 404, layout(m, 'Not found'), '<p>There is no such event here.</p>');
  const csrfField = (m: Member) => `<input type="hidden" name="csrf" value="${e(m.csrf)}">`;

  const listPage = async (reply: FastifyReply, m: Member, q: Record<string, unknown>, status = 200, message?: { notice?: string; error?: string; html?: string }, urlValue?: string) => {
    const entityId = m.entity.entity_id;
    const base = `/dashboard/${entityId}/webhooks`;
    const endpoint = await deps.webhooks.getEndpoint(entityId).catch((err: unknown) => {
      if (isProblem(err, PROBLEM_TYPE.notFound)) return undefined;
      throw err;
    });
    const filter = typeof q.status === 'string' && (STATUSES as string[]).includes(q.status) ? q.status as EventStatus : undefined;
    const after = typeof q.after === 'string' && UUID.test(q.after) ? q.after : undefined;
    let events: Awaited<ReturnType<WebhooksService['listEvents']>>;
    try {
      events = await deps.webhooks.listEvents(entityId, PAGE, { status: filter, after });
    } catch (err) {
      if (!isProblem(err, PROBLEM_TYPE.invalidRequest)) throw err; // a cursor of another entity: the first page
      events = await deps.webhooks.listEvents(entityId, PAGE, { status: filter });
    }
    const rows = events.data.map((ev) => {
      const last = ev.deliveries[ev.deliveries.length - 1];
      return `<tr><td>${e(when(ev.created_at, m.entity.time_zone))}</td><td><a href="${base}/${e(ev.id)}">${e(ev.type)}</a></td><td class="status">${e(statusLabel(ev.status))}</td>
<td class="num">${ev.deliveries.reduce((s, d) => s + d.attempt_count, 0)}</td><td>${last?.last_status_code ?? (last?.last_error ? 'error' : '—')}</td></tr>`;
    }).join('');
    const opt = (v: string, label: string) => `<option value="${e(v)}"${(filter ?? '') === v ? ' selected' : ''}>${e(label)}</option>`;
    const older = events.next_cursor ? `<nav class="pager" aria-label="Pages"><a rel="next" href="${base}?${new URLSearchParams({ ...(filter ? { status: filter } : {}), after: events.next_cursor })}">Older</a></nav>` : '';
    return page(reply, status, layout(m, 'Webhooks'), `
${message?.notice ? `<p class="notice" role="status">${e(message.notice)}</p>` : ''}${message?.error ? `<div class="error" role="alert">${e(message.error)}</div>` : ''}${message?.html ?? ''}
<h2>Endpoint</h2>
<p>${endpoint ? `Events are sent to <code>${e(endpoint.url)}</code>, signed in the <code>${SIGNATURE_HEADER}</code> header with the entity's secret.` : 'No endpoint: events are kept, and can be replayed once an endpoint is set.'}</p>
<form method="post" action="${base}/endpoint" class="filters" data-once>${csrfField(m)}
<div><label for="endpoint-url">Endpoint URL (https)</label><input id="endpoint-url" name="url" type="url" required maxlength="2048" value="${e(urlValue ?? endpoint?.url ?? '')}"></div>
<div><button type="submit">${endpoint ? 'Change the endpoint' : 'Set the endpoint'}</button></div>
</form>
${endpoint ? `<form method="post" action="${base}/endpoint/delete" data-once>${csrfField(m)}<button type="submit" class="danger">Remove the endpoint</button></form>` : ''}
<form method="post" action="${base}/secret/rotate" data-once>${csrfField(m)}<button type="submit" class="secondary">Rotate the signing secret</button>
<p class="hint">The new secret is shown once; the previous one still signs for 24 hours (a second signature), so that receivers can switch.</p></form>
<h2>Delivery log</h2>
<form method="get" class="filters" role="search" aria-label="Filter events">
<div><label for="status">Status</label><select id="status" name="status">${opt('', 'Any')}${STATUSES.map((s) => opt(s, statusLabel(s))).join('')}</select></div>
<div><button type="submit">Filter</button></div>
</form>
<div class="table-wrap" role="region" tabindex="0" aria-label="Webhook events (scrolls sideways on small screens)"><table aria-label="Webhook events">
<thead><tr><th scope="col">Created</th><th scope="col">Event</th><th scope="col">Status</th><th scope="col" class="num">Attempts</th><th scope="col">Last answer</th></tr></thead>
<tbody>${rows || '<tr><td colspan="5">No event.</td></tr>'}</tbody></table></div>
${older}`);
  };

  app.get('/dashboard/:entity/webhooks', { schema: { hide: true, params } }, async (request, reply) => {
    const m = await deps.member(request, reply, 'admin');
    if (!m) return reply;
    const q = request.query as Record<string, unknown>;
    const notice = q.saved === '1' ? 'The endpoint is saved: the next events go there.' : q.removed === '1' ? 'The endpoint is removed: events are kept, not sent.' : undefined;
    return listPage(reply, m, q, 200, notice ? { notice } : undefined);
  });

  app.post('/dashboard/:entity/webhooks/endpoint', { schema: { hide: true, params, body: form } }, async (request, reply) => {
    const m = await deps.member(request, reply, 'admin');
    if (!m) return reply;
    if (!deps.csrfOk(request, m)) return refused(reply, m);
    const url = ((request.body as Record<string, string>).url ?? '').trim();
    let saved;
    try {
      saved = await deps.webhooks.putEndpoint(m.entity.entity_id, url);
    } catch (err) {
      if (err instanceof Problem && err.status < 500) {
        const why = (err.extra.invalid_params as Array<{ name: string; reason: string }> | undefined)?.map((p) => `${p.name} ${p.reason}`).join('; ');
        return listPage(reply, m, {}, 400, { error: `The endpoint was not saved: ${why || err.detail || err.title}` }, url);
      }
      throw err;
    }
    await membersRepo.recordAction(deps.db, { entity_id: m.entity.entity_id, user_id: m.userId, user_email: m.email, action: 'Set webhook endpoint', payment_id: null, idempotency_key: null, amount: null });
    if (saved.secret) {
      // The entity's first endpoint: its signing secret, shown in this answer only.
      return listPage(reply, m, {}, 201, { html: `<div class="notice" role="status"><p>The endpoint is saved. Its signing secret, shown this once: copy it now.</p>
<label for="new-secret">Signing secret</label><input id="new-secret" readonly value="${e(saved.secret)}"> <button type="button" class="secondary" data-copy="new-secret">Copy</button></div>` });
    }
    return reply.redirect(`/dashboard/${m.entity.entity_id}/webhooks?saved=1`, 303);
  });

  app.post('/dashboard/:entity/webhooks/endpoint/delete', { schema: { hide: true, params, body: form } }, async (request, reply) => {
    const m = await deps.member(request, reply, 'admin');
    if (!m) return reply;
    if (!deps.csrfOk(request, m)) return refused(reply, m);
    try {
      await deps.webhooks.deleteEndpoint(m.entity.entity_id);
    } catch (err) {
      if (!isProblem(err, PROBLEM_TYPE.notFound)) throw err; // already removed
    }
    await membersRepo.recordAction(deps.db, { entity_id: m.entity.entity_id, user_id: m.userId, user_email: m.email, action: 'Remove webhook endpoint', payment_id: null, idempotency_key: null, amount: null });
    return reply.redirect(`/dashboard/${m.entity.entity_id}/webhooks?removed=1`, 303);
  });

  app.post('/dashboard/:entity/webhooks/secret/rotate', { schema: { hide: true, params, body: form } }, async (request, reply) => {
    const m = await deps.member(request, reply, 'admin');
    if (!m) return reply;
    if (!deps.csrfOk(request, m)) return refused(reply, m);
    const rotated = await deps.webhooks.rotateSecret(m.entity.entity_id, ROTATION_OVERLAP_SECONDS);
    await membersRepo.recordAction(deps.db, { entity_id: m.entity.entity_id, user_id: m.userId, user_email: m.email, action: 'Rotate webhook secret', payment_id: null, idempotency_key: null, amount: null });
    return listPage(reply, m, {}, 200, { html: `<div class="notice" role="status"><p>The new signing secret (version ${rotated.version}), shown this once: copy it now. The previous one also signs until ${e(when(rotated.previous_expires_at ?? new Date(), m.entity.time_zone))}.</p>
<label for="new-secret">Signing secret</label><input id="new-secret" readonly value="${e(rotated.secret)}"> <button type="button" class="secondary" data-copy="new-secret">Copy</button></div>` });
  });

  const eventPage = async (reply: FastifyReply, m: Member, eventId: string, message?: { notice?: string; error?: string }, status = 200) => {
    const ev = await deps.webhooks.getEvent(m.entity.entity_id, eventId).catch((err: unknown) => {
      if (isProblem(err, PROBLEM_TYPE.notFound)) return undefined;
      throw err;
    });
    if (!ev) return notFound(reply, m);
    const body = JSON.stringify(JSON.parse(envelope({ event_id: ev.id, type: ev.type, event_created_at: ev.created_at, entity_id: ev.entity_id, data: ev.data })), null, 2);
    const deliveries = ev.deliveries.map((d, i) => `<section aria-labelledby="delivery-${i}">
<h3 id="delivery-${i}">${d.reason === 'REPLAY' ? 'Replay' : 'Delivery'} of ${e(when(d.created_at, m.entity.time_zone))}: ${e(statusLabel(d.status))}</h3>
<p>To <code>${e(d.url ?? 'no destination')}</code>${d.header_names.length ? `, with the headers ${d.header_names.map((n) => `<code>${e(n)}</code>`).join(', ')}` : ''}.${d.next_attempt_at ? ` Next attempt ${e(when(d.next_attempt_at, m.entity.time_zone))}.` : ''}</p>
<div class="table-wrap" role="region" tabindex="0" aria-label="Attempts (scrolls sideways on small screens)"><table aria-label="Attempts">
<thead><tr><th scope="col">#</th><th scope="col">Sent</th><th scope="col">Answer</th><th scope="col" class="num">Time</th><th scope="col">Response body</th></tr></thead>
<tbody>${(d.attempts ?? []).map((a) => `<tr><td>${a.number}</td><td>${e(when(a.started_at, m.entity.time_zone))}</td><td>${a.status_code ?? e(a.error ?? '—')}</td><td class="num">${a.duration_ms} ms</td><td><pre>${e(a.response_body ?? '')}</pre></td></tr>`).join('') || '<tr><td colspan="5">No attempt yet.</td></tr>'}</tbody></table></div>
</section>`).join('');
    const base = `/dashboard/${m.entity.entity_id}/webhooks/${ev.id}`;
    return page(reply, status, layout(m, `Event ${ev.type}`), `
${message?.notice ? `<p class="notice" role="status">${e(message.notice)}</p>` : ''}${message?.error ? `<div class="error" role="alert">${e(message.error)}</div>` : ''}
<p><a href="/dashboard/${e(m.entity.entity_id)}/webhooks">All events</a></p>
<dl class="facts"><dt>Event</dt><dd><code>${e(ev.id)}</code></dd><dt>Type</dt><dd>${e(ev.type)}</dd><dt>Created</dt><dd>${e(when(ev.created_at, m.entity.time_zone))}</dd>
<dt>Status</dt><dd class="status">${e(statusLabel(ev.status))}</dd><dt>Sent to</dt><dd>${ev.target === 'EVENT' ? 'the payment link\'s own webhook' : 'the entity\'s endpoint'}</dd></dl>
<form method="post" action="${base}/replay" data-once>${csrfField(m)}<input type="hidden" name="form_key" value="${randomUUID()}">
<button type="submit">Replay this event</button> <span class="hint">Sends the same event (same id and body) once more, now.</span></form>
<h2>Request</h2>
<p><code>POST</code> with <code>content-type: application/json</code>, <code>${SIGNATURE_HEADER}</code> (computed at each attempt) and this body:</p>
<pre class="payload" tabindex="0" aria-label="Request body">${e(body)}</pre>
<h2>Deliveries</h2>
${deliveries || '<p>No delivery: there was no destination when the event was made. Set an endpoint, then replay it.</p>'}`);
  };

  app.get('/dashboard/:entity/webhooks/:event', { schema: { hide: true, params: withEvent } }, async (request, reply) => {
    const m = await deps.member(request, reply, 'admin');
    if (!m) return reply;
    const q = request.query as Record<string, unknown>;
    const notice = q.replayed === '1' ? 'Replayed: a new delivery is on its way.' : q.replayed === 'already' ? 'This replay form was already sent once; nothing more was done.' : undefined;
    return eventPage(reply, m, (request.params as { event: string }).event, notice ? { notice } : undefined);
  });

  app.post('/dashboard/:entity/webhooks/:event/replay', { schema: { hide: true, params: withEvent, body: form } }, async (request, reply) => {
    const m = await deps.member(request, reply, 'admin');
    if (!m) return reply;
    if (!deps.csrfOk(request, m)) return refused(reply, m);
    const eventId = (request.params as { event: string }).event;
    const key = (request.body as Record<string, string>).form_key ?? '';
    if (!UUID.test(key)) return eventPage(reply, m, eventId, { error: 'The form is incomplete: reload the page.' }, 400);
    const base = `/dashboard/${m.entity.entity_id}/webhooks/${eventId}`;
    let delivery;
    try {
      delivery = await deps.webhooks.replay(m.entity.entity_id, eventId, (tx) => membersRepo.recordAction(tx, {
        entity_id: m.entity.entity_id, user_id: m.userId, user_email: m.email, action: 'Replay webhook', payment_id: null, idempotency_key: key, amount: null,
      }));
    } catch (err) {
      if (isProblem(err, PROBLEM_TYPE.notFound)) return notFound(reply, m);
      if (err instanceof Problem && err.status < 500) return eventPage(reply, m, eventId, { error: `Not replayed: ${err.detail ?? err.title}` }, err.status);
      throw err;
    }
    return reply.redirect(`${base}?replayed=${delivery ? '1' : 'already'}`, 303);
  });
}
