// The bodies of the webhook pages (docs/dashboard.md "Webhooks"; their routes are
// webhook-endpoints*.routes.ts): the Webhooks page (the entity's endpoints with the form
// that adds one, and the delivery log), an endpoint's page (its events and status,
// rotation, test event, delete), the delete confirmation, and an event's page.
import { randomUUID } from 'node:crypto';
import type { VNode } from 'preact';
import { CsrfField } from '../web/index.ts';
import { EVENT_TYPES } from '../webhooks/catalogue.ts';
import { envelope } from '../webhooks/dispatcher.ts';
import type { EndpointRow, EventView } from '../webhooks/webhooks.service.ts';
import { MAX_ENDPOINTS_PER_ENTITY } from '../webhooks/webhooks.service.ts';
import { SIGNATURE_HEADER } from '../webhooks/signature.ts';
import type { Member } from './links-keys.routes.ts';
import { base, type Message, Messages, SecretShown, statusLabel } from './webhook-endpoints.common.tsx';
import { when } from './views.ts';

/** The types a merchant subscribes to (the test event goes to its endpoint whatever they are). */
const CHOICES = EVENT_TYPES.filter((t) => t.type !== 'webhook_endpoint.test');
const eventsText = (events: string[]) => (events.includes('*') ? 'All event types' : events.join(', '));

/** The event types' checkboxes: "*" (every type, those to come too) or some of them. */
export function EventChoices({ chosen }: { chosen: string[] }): VNode {
  return (
    <fieldset>
      <legend>Events sent to it</legend>
      <div><input type="checkbox" id="event-all" name="events" value="*" checked={chosen.includes('*')} /> <label class="inline" for="event-all">All event types, those added later too</label></div>
      {CHOICES.map((t, i) => (
        <div><input type="checkbox" id={`event-${i}`} name="events" value={t.type} checked={chosen.includes(t.type)} /> <label class="inline" for={`event-${i}`}><code>{t.type}</code>: {t.summary}</label></div>
      ))}
    </fieldset>
  );
}

export function EndpointsTable({ m, endpoints }: { m: Member; endpoints: EndpointRow[] }): VNode {
  if (endpoints.length === 0) return <p>No endpoint: events are kept, and can be replayed once an endpoint is added.</p>;
  return (
    <div class="table-wrap" role="region" tabindex={0} aria-label="Webhook endpoints (scrolls sideways on small screens)">
      <table aria-label="Webhook endpoints">
        <thead><tr><th scope="col">URL</th><th scope="col">Events</th><th scope="col">Status</th><th scope="col">Created</th></tr></thead>
        <tbody>
          {endpoints.map((e) => (
            <tr>
              <td><a href={`${base(m)}/endpoints/${e.id}`}>{e.url}</a>{e.is_default ? <span class="hint"> (default endpoint of the deprecated API)</span> : null}</td>
              <td>{eventsText(e.enabled_events)}</td>
              <td class="status">{statusLabel(e.status)}</td>
              <td>{when(e.created_at, m.entity.time_zone)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function CreateForm({ m, count, draft }: { m: Member; count: number; draft?: { url: string; events: string[] } | undefined }): VNode {
  return (
    <form method="post" action={`${base(m)}/endpoints`} class="card" data-once>
      <CsrfField token={m.csrf} />
      <h2>Add an endpoint</h2>
      <p class="hint">{count} of at most {MAX_ENDPOINTS_PER_ENTITY} endpoints. Each has its own signing secret, shown once when it is added.</p>
      <label for="endpoint-url">Endpoint URL (https)</label>
      <input id="endpoint-url" name="url" type="url" required maxlength={2048} value={draft?.url ?? ''} />
      <EventChoices chosen={draft?.events ?? ['*']} />
      <p><button type="submit">Add the endpoint</button></p>
    </form>
  );
}

/** An endpoint's page: what it receives and how it is signed; its events and status; rotation, test event, delete. */
export function EndpointBody({ m, e, draft }: { m: Member; e: EndpointRow; draft?: { events: string[]; status: string } | undefined }): VNode {
  const at = `${base(m)}/endpoints/${e.id}`;
  const status = draft?.status ?? e.status;
  return (
    <>
      <p><a href={base(m)}>All endpoints and events</a></p>
      <dl class="facts">
        <dt>URL</dt><dd><code>{e.url}</code></dd>
        <dt>Status</dt><dd class="status">{statusLabel(e.status)}</dd>
        <dt>Events</dt><dd>{eventsText(e.enabled_events)}</dd>
        <dt>Signed</dt><dd>in the <code>{SIGNATURE_HEADER}</code> header, {e.is_default ? 'with the entity\'s secret (the default endpoint of the deprecated API)' : 'with its own secret'}</dd>
        {e.headers.length ? <><dt>Extra headers</dt><dd>{e.headers.map((h) => h.name).join(', ')}</dd></> : null}
        <dt>Created</dt><dd>{when(e.created_at, m.entity.time_zone)}</dd>
      </dl>
      <form method="post" action={at} class="card" data-once>
        <CsrfField token={m.csrf} />
        <h2>Events and status</h2>
        <EventChoices chosen={draft?.events ?? e.enabled_events} />
        <label for="endpoint-status">Status</label>
        <select id="endpoint-status" name="status">
          <option value="enabled" selected={status === 'enabled'}>Enabled: new events are sent to it</option>
          <option value="disabled" selected={status === 'disabled'}>Disabled: no new event is sent to it (its pending deliveries still are)</option>
        </select>
        <p><button type="submit">Save</button></p>
      </form>
      <div class="actions">
        <form method="post" action={`${at}/rotate`} data-once>
          <CsrfField token={m.csrf} />
          <button type="submit" class="secondary">Rotate the signing secret</button>
          <p class="hint">The new secret is shown once; the previous one still signs for 24 hours (a second signature), so that the receiver can switch.</p>
        </form>
        <form method="post" action={`${at}/test`} data-once>
          <CsrfField token={m.csrf} />
          <button type="submit" class="secondary">Send a test event</button>
          <p class="hint">A <code>webhook_endpoint.test</code> event, to this endpoint only, whatever its events and status.</p>
        </form>
        <p><a href={`${at}/delete`}>Delete this endpoint…</a></p>
      </div>
    </>
  );
}

export function DeleteConfirm({ m, e }: { m: Member; e: EndpointRow }): VNode {
  const at = `${base(m)}/endpoints/${e.id}`;
  return (
    <>
      <p>Delete the endpoint <code>{e.url}</code>? No new event goes to it; its pending deliveries end failed when their retry window closes. This cannot be undone (add it again to get a new secret).</p>
      <form method="post" action={`${at}/delete`} data-once>
        <CsrfField token={m.csrf} />
        <button type="submit" class="danger">Delete {e.url}</button> <a href={at}>Keep it</a>
      </form>
    </>
  );
}

const STATUSES = ['PENDING', 'DELIVERED', 'FAILED', 'NO_DESTINATION'] as const;

/** The delivery log: events newest first, filtered by status, a page at a time. */
export function EventLog({ m, events, filter, next }: { m: Member; events: EventView[]; filter: string | undefined; next: string | null }): VNode {
  return (
    <>
      <h2>Delivery log</h2>
      <form method="get" class="filters" role="search" aria-label="Filter events">
        <div><label for="status">Status</label><select id="status" name="status">
          <option value="" selected={!filter}>Any</option>
          {STATUSES.map((s) => <option value={s} selected={filter === s}>{statusLabel(s)}</option>)}
        </select></div>
        <div><button type="submit">Filter</button></div>
      </form>
      <div class="table-wrap" role="region" tabindex={0} aria-label="Webhook events (scrolls sideways on small screens)">
        <table aria-label="Webhook events">
          <thead><tr><th scope="col">Created</th><th scope="col">Event</th><th scope="col">Status</th><th scope="col" class="num">Attempts</th><th scope="col">Last answer</th></tr></thead>
          <tbody>
            {events.length === 0 ? <tr><td colSpan={5}>No event.</td></tr> : events.map((ev) => {
              const last = ev.deliveries[ev.deliveries.length - 1];
              return (
                <tr>
                  <td>{when(ev.created_at, m.entity.time_zone)}</td><td><a href={`${base(m)}/${ev.id}`}>{ev.type}</a></td><td class="status">{statusLabel(ev.status)}</td>
                  <td class="num">{ev.deliveries.reduce((s, d) => s + d.attempt_count, 0)}</td><td>{last?.last_status_code ?? (last?.last_error ? 'error' : '—')}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      {next ? <nav class="pager" aria-label="Pages"><a rel="next" href={`${base(m)}?${new URLSearchParams({ ...(filter ? { status: filter } : {}), after: next })}`}>Older</a></nav> : null}
    </>
  );
}
export const EVENT_STATUSES: readonly string[] = STATUSES;

/** A signing secret to show once, with the sentence that leads it. */
export interface ShownSecret { lead: string; secret: string }

/** The Webhooks page: the endpoints, the form that adds one (or why not), the delivery log. */
export function WebhooksBody({ m, endpoints, events, filter, next, message, secret, draft }: {
  m: Member; endpoints: EndpointRow[]; events: EventView[]; filter: string | undefined; next: string | null;
  message?: Message | undefined; secret?: ShownSecret | undefined; draft?: { url: string; events: string[] } | undefined;
}): VNode {
  return (
    <>
      <Messages message={message} />
      {secret ? <SecretShown lead={secret.lead} secret={secret.secret} /> : null}
      <h2>Endpoints</h2>
      <p>Each event is sent to every enabled endpoint that takes its type, signed in its header with that endpoint's secret.</p>
      <EndpointsTable m={m} endpoints={endpoints} />
      {endpoints.length < MAX_ENDPOINTS_PER_ENTITY || draft
        ? <CreateForm m={m} count={endpoints.length} draft={draft} />
        : <p>This entity has {MAX_ENDPOINTS_PER_ENTITY} endpoints, the most it may have: delete one to add another.</p>}
      <EventLog m={m} events={events} filter={filter} next={next} />
    </>
  );
}

/** An endpoint's page, with the answer of its last form (a message, a new secret, the draft kept). */
export function EndpointPageBody({ m, e, message, secret, draft }: {
  m: Member; e: EndpointRow; message?: Message | undefined; secret?: ShownSecret | undefined; draft?: { events: string[]; status: string } | undefined;
}): VNode {
  return (
    <>
      <Messages message={message} />
      {secret ? <SecretShown lead={secret.lead} secret={secret.secret} /> : null}
      <EndpointBody m={m} e={e} draft={draft} />
    </>
  );
}

/** An event's page: the request as sent, Replay (once per form), each delivery with every attempt's answer. */
export function EventBody({ m, ev, message }: { m: Member; ev: EventView & { data: unknown }; message?: Message | undefined }): VNode {
  const zone = m.entity.time_zone;
  const body = JSON.stringify(JSON.parse(envelope({ event_id: ev.id, type: ev.type, event_created_at: ev.created_at, entity_id: ev.entity_id, data: ev.data })), null, 2);
  const at = `${base(m)}/${ev.id}`;
  return (
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
  );
}
