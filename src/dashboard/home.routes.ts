// The dashboard's assets, the list of the user's merchants, the merchant switch, and a
// merchant's home page (today's volume and authorisation rate, the last 14 days).
import type { FastifyInstance } from 'fastify';
import type { DashboardAuth } from './auth.routes.ts';
import type { DashboardService } from './dashboard.service.ts';
import { ASSETS, DASHBOARD_CSS, DASHBOARD_JS, addDays, dayIn, dayStart, money, page } from './views.ts';
import { EntityParams, UUID } from './params.ts';
import { layoutOf } from './parts.tsx';
import { HomeBody, MerchantList } from './home-page.tsx';

export async function homeRoutes(app: FastifyInstance, deps: { dashboard: DashboardService; auth: DashboardAuth }) {
  const { signedIn, member, staleOk } = deps.auth;
  app.get(`${ASSETS}/dashboard.css`, { schema: { hide: true } }, async (_r, reply) =>
    reply.header('content-type', 'text/css; charset=utf-8').header('cache-control', 'public, max-age=3600').send(DASHBOARD_CSS));
  app.get(`${ASSETS}/dashboard.js`, { schema: { hide: true } }, async (_r, reply) =>
    reply.header('content-type', 'text/javascript; charset=utf-8').header('cache-control', 'public, max-age=3600').send(DASHBOARD_JS));

  app.get('/dashboard', { schema: { hide: true } }, async (request, reply) => {
    const s = await signedIn(request, reply);
    if (!s) return reply;
    if (s.memberships.length === 1) return reply.redirect(`/dashboard/${s.memberships[0]!.entity_id}`, 303);
    return page(reply, 200, { title: 'Your merchants', email: s.email, csrf: s.csrf, memberships: s.memberships }, MerchantList({ memberships: s.memberships }));
  });

  app.get('/dashboard/switch', { schema: { hide: true } }, async (request, reply) => {
    const entity = String((request.query as Record<string, unknown>).entity ?? '');
    return reply.redirect(UUID.test(entity) ? `/dashboard/${entity}` : '/dashboard', 303);
  });

  // ---- home: today's volume and authorisation rate, the last 14 days ----

  app.get('/dashboard/:entity', { schema: { hide: true, params: EntityParams } }, async (request, reply) => {
    const m = await member(request, reply);
    if (!m) return reply;
    // Days are the merchant's (its time zone, Team page): today and the 13 days before it.
    const zone = m.entity.time_zone;
    const today = dayIn(Date.now(), zone);
    const days = Array.from({ length: 14 }, (_, i) => addDays(today, i - 13));
    const rows = await deps.dashboard.daysSince(staleOk(request), m.entity.entity_id, zone, dayStart(days[0]!, zone));
    const currency = rows.find((r) => r.day === today)?.currency ?? rows[0]?.currency ?? 'EUR';
    const of = (day: string) => rows.filter((r) => r.day === day && r.currency === currency);
    const todayRows = of(today);
    const volume = todayRows.reduce((s, r) => s + Number(r.volume), 0);
    const authorized = todayRows.reduce((s, r) => s + r.authorized, 0);
    const decided = authorized + todayRows.reduce((s, r) => s + r.refused, 0);
    const rate = decided ? `${Math.round((authorized / decided) * 1000) / 10} %` : 'no payment yet';
    const series = days.map((day) => {
      const v = of(day).reduce((s, r) => s + Number(r.volume), 0);
      return { day, value: v, label: money(v, currency) };
    });
    return page(reply, 200, layoutOf(m, `${m.entity.entity_name}: today`, 'home'), HomeBody({
      entityId: m.entity.entity_id, volume: money(volume, currency), rate, authorized, series,
      caption: `Volume authorised per day, last 14 days (${currency}, days in ${zone})`,
    }));
  });

}
