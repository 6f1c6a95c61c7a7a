// The bodies of the webhook pages (docs/dashboard.md "Webhooks"): the entity's endpoints
// with the form that adds one, an endpoint's page (its events and status, rotation, test
// event, delete), the delete confirmation, and the delivery log.
import type { VNode } from 'preact';
import { CsrfField } from '../web/index.ts';
import { EVENT_TYPES } from '../webhooks/catalogue.ts';
import type { EndpointRow, EventView } from '../webhooks/webhooks.service.ts';
import { MAX_ENDPOINTS_PER_ENTITY } from '../webhooks/webhooks.service.ts';
import { SIGNATURE_HEADER } from '../webhooks/signature.ts';
import type { Member } from './links-keys.routes.ts';
import { base, statusLabel } from './webhook-endpoints.common.tsx';
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
