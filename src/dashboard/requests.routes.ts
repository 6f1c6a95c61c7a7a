// The dashboard's Requests page (admins; docs/dashboard.md "Requests"): the entity's recent
// payment API calls, newest first, 50 a page by keyset, optionally the errors only. What
// is shown is what the request log keeps (src/platform/observability/request-log.ts): the
// method, the route template, the status, the idempotency key, the request id, the time
// and the duration, never a body, a query string or a credential. Only this entity's rows
// are read (entity_id is the index's first column and the query's first condition).
import type { FastifyInstance } from 'fastify';
import type { ExtraDeps } from './links-keys.routes.ts';
import { EntityParams } from './params.ts';
import { layoutOf } from './parts.tsx';
import { RequestsBody } from './requests-page.tsx';
import { page } from './views.ts';

const CURSOR = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)~(\d{1,19})$/;
const PER_PAGE = 50;

export async function requestLogPageRoutes(app: FastifyInstance, deps: { perSecond: number } & Pick<ExtraDeps, 'member' | 'dashboard'>) {
  app.get('/dashboard/:entity/requests', { schema: { hide: true, params: EntityParams } }, async (request, reply) => {
    const m = await deps.member(request, reply, 'admin');
    if (!m) return reply;
    const q = request.query as Record<string, unknown>;
    const errorsOnly = q.errors === '1';
    const cursor = typeof q.before === 'string' ? CURSOR.exec(q.before) : null;
    const rows = await deps.dashboard.requestLog(m.entity.entity_id, { limit: PER_PAGE, before: cursor ? { at: cursor[1]!, id: cursor[2]! } : undefined, errorsOnly });
    const items = rows.slice(0, PER_PAGE);
    const last = items[items.length - 1];
    const older = rows.length > PER_PAGE && last ? String(new URLSearchParams({ ...(errorsOnly ? { errors: '1' } : {}), before: `${last.created_at}~${last.id}` })) : undefined;
    return page(reply, 200, layoutOf(m, 'Requests', 'requests'), RequestsBody({
      zone: m.entity.time_zone, rows: items, errorsOnly, perSecond: deps.perSecond, older, base: `/dashboard/${m.entity.entity_id}/requests`,
    }));
  });
}
