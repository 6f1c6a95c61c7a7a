// The dashboard's Requests page (admins; docs/dashboard.md "Requests"): the entity's recent
// payment API calls, newest first, 50 a page by keyset, optionally the errors only. What
// is shown is what the request log keeps (src/platform/observability/request-log.ts): the
// method, the route template, the status, the idempotency key, the request id, the time
// and the duration, never a body, a query string or a credential. Only this entity's rows
// are read (entity_id is the index's first column and the query's first condition).
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { Db } from '../platform/db/index.ts';
import { escapeHtml as e } from '../checkout/pages.ts';
import { requestLogRepo } from '../platform/observability/request-log.repo.ts';
import { REQUEST_LOG_RETENTION_DAYS } from '../platform/observability/request-log.ts';
import type { ExtraDeps } from './links-keys.routes.ts';
import { page, when } from './views.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const CURSOR = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)~(\d{1,19})$/;
const PER_PAGE = 50;

export async function requestLogPageRoutes(app: FastifyInstance, deps: { db: Db; perSecond: number } & Pick<ExtraDeps, 'member'>) {
  const params = Type.Object({ entity: Type.String({ pattern: UUID.source }) });
  app.get('/dashboard/:entity/requests', { schema: { hide: true, params } }, async (request, reply) => {
    const m = await deps.member(request, reply, 'admin');
    if (!m) return reply;
    const q = request.query as Record<string, unknown>;
    const errorsOnly = q.errors === '1';
    const cursor = typeof q.before === 'string' ? CURSOR.exec(q.before) : null;
    const rows = await requestLogRepo.page(deps.db, m.entity.entity_id, { limit: PER_PAGE, before: cursor ? { at: cursor[1]!, id: cursor[2]! } : undefined, errorsOnly });
    const items = rows.slice(0, PER_PAGE);
    const base = `/dashboard/${m.entity.entity_id}/requests`;
    const zone = m.entity.time_zone;
    const body = items.map((r) => `<tr${r.status >= 400 ? ' class="failed"' : ''}><td><time datetime="${e(r.created_at)}">${e(when(r.created_at, zone))}</time></td><td>${e(r.method)}</td><td><code>${e(r.route)}</code></td>
<td class="num status">${r.status}</td><td class="num">${r.duration_ms} ms</td><td><code>${e(r.idempotency_key ?? '—')}</code></td><td><code>${e(r.request_id)}</code></td></tr>`).join('');
    const last = items[items.length - 1];
    const older = rows.length > PER_PAGE && last
      ? `<nav class="pager" aria-label="Pages"><a rel="next" href="${base}?${new URLSearchParams({ ...(errorsOnly ? { errors: '1' } : {}), before: `${last.created_at}~${last.id}` })}">Older</a></nav>` : '';
    return page(reply, 200, { title: 'Requests', email: m.email, csrf: m.csrf, memberships: m.memberships, entity: m.entity, current: 'requests' }, `
<p>The calls made to the payment API with this merchant's API keys and tokens, newest first, kept ${REQUEST_LOG_RETENTION_DAYS} days. Bodies, query strings and credentials are never recorded.
A call shows here within about a second${deps.perSecond > 0 ? `; past ${deps.perSecond} calls a second, successful calls are not all kept (errors are)` : ' (the request log is off on this payd: PAYD_REQUEST_LOG_PER_SECOND=0)'}.</p>
<form method="get" class="filters" aria-label="Filter requests">
<div><input type="checkbox" id="errors" name="errors" value="1"${errorsOnly ? ' checked' : ''}> <label for="errors" class="inline">Errors only (status 400 and above)</label></div>
<div><button type="submit">Show</button></div>
</form>
<div class="table-wrap" role="region" tabindex="0" aria-label="Requests (scrolls sideways on small screens)"><table aria-label="Requests" class="log">
<thead><tr><th scope="col">Time</th><th scope="col">Method</th><th scope="col">Path</th><th scope="col" class="num">Status</th><th scope="col" class="num">Duration</th><th scope="col">Idempotency key</th><th scope="col">Request id</th></tr></thead>
<tbody>${body || '<tr><td colspan="7">No request recorded.</td></tr>'}</tbody></table></div>
${older}`);
  });
}
