// The dashboard's Team page (admins): who may use this entity's dashboard, invite someone
// (an address without an account gets one and a mail to choose a password, as through the
// operator API: the same TeamService.invite), change a role, remove a member, the team's
// time zone and sign-in security. The entity keeps at least one admin.
import type { FastifyInstance, FastifyReply } from 'fastify';
import { Type } from 'typebox';
import { Problem } from '../platform/http/problem.ts';
import { hasSecondFactor } from '../identity/mfa/amr.ts';
import { ROLES, type Role } from './members.ts';
import type { ExtraDeps, Member } from './links-keys.routes.ts';
import { actionBy } from './access.tsx';
import type { DashboardService } from './dashboard.service.ts';
import { LAST_ADMIN, type TeamService } from './team.service.ts';
import { EntityParams, UUID } from './params.ts';
import { formExpired, layoutOf, notFound } from './parts.tsx';
import { TeamBody, type TeamMessage } from './team-page.tsx';
import { page, validZone } from './views.ts';

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const isRole = (r: string | undefined): r is Role => (ROLES as readonly string[]).includes(r ?? '');

export type TeamPageDeps = { team: TeamService; dashboard: DashboardService } & Pick<ExtraDeps, 'member' | 'csrfOk'>;

export async function teamPageRoutes(app: FastifyInstance, deps: TeamPageDeps) {
  const withUser = Type.Object({ entity: Type.String({ pattern: UUID.source }), user: Type.String({ pattern: UUID.source }) });
  const form = Type.Record(Type.String(), Type.String({ maxLength: 300 }));
  const teamPage = async (reply: FastifyReply, m: Member, status = 200, message?: TeamMessage, values: Record<string, string> = {}) => {
    const [members, pending] = [await deps.team.of(m.entity.entity_id), await deps.team.pendingOf(m.entity.entity_id)];
    return page(reply, status, layoutOf(m, 'Team', 'team'), TeamBody({ m, members, pending, message, values }));
  };
  /** The admin of the URL's entity, after the form's CSRF check (else the answer is sent). */
  const admin = async (request: Parameters<ExtraDeps['member']>[0], reply: FastifyReply, post = true) => {
    const m = await deps.member(request, reply, 'admin');
    if (m && post && !deps.csrfOk(request, m)) {
      formExpired(reply, m, 'team');
      return undefined;
    }
    return m;
  };

  app.get('/dashboard/:entity/team', { schema: { hide: true, params: EntityParams } }, async (request, reply) => {
    const m = await admin(request, reply, false);
    if (!m) return reply;
    const q = request.query as Record<string, unknown>;
    const notice = q.invited === '1' ? 'Invited: a mail asks them to choose a password.' : q.added === '1' ? 'Added: they can sign in now.'
      : q.saved === '1' ? 'The role is changed.' : q.zone === '1' ? `The time zone is saved: ${m.entity.time_zone}.` : q.security === '1' ? 'Sign-in security is saved.' : q.removed === '1' ? 'The member is removed.' : undefined;
    return teamPage(reply, m, 200, notice ? { notice } : undefined);
  });

  app.post('/dashboard/:entity/team', { schema: { hide: true, params: EntityParams, body: form } }, async (request, reply) => {
    const m = await admin(request, reply);
    if (!m) return reply;
    const b = request.body as Record<string, string>;
    const email = (b.email ?? '').trim();
    if (!EMAIL.test(email) || email.length > 254) return teamPage(reply, m, 400, { error: 'Email: an address such as olga@shop.example.' }, b);
    if (!isRole(b.role)) return teamPage(reply, m, 400, { error: `Role: one of ${ROLES.join(', ')}.` }, b);
    let invited;
    try {
      // A merchant's admin cannot vouch for an existing account (team.service.ts, invite).
      invited = await deps.team.invite(m.entity.entity_id, email, b.role, m.email, { trustExistingAccount: false });
    } catch (err) {
      if (err instanceof Problem && err.status < 500) return teamPage(reply, m, err.status, { error: err.detail ?? err.title }, b);
      throw err;
    }
    await deps.dashboard.recordPlain(actionBy(m), `Invite ${email} as ${b.role}`);
    if (invited.invitation_url) {
      // The link is shown here once, never stored: no redirect (a page that could be loaded again).
      reply.header('cache-control', 'no-store');
      return teamPage(reply, m, 200, {
        notice: invited.pending
          ? 'Invited: this address already has a payd account. It becomes a member once its owner chooses a new password with the link (by mail, when this payd sends mail).'
          : 'Invited: a mail asks them to choose a password (when this payd sends mail).',
        link: { email, url: invited.invitation_url },
      });
    }
    return reply.redirect(`/dashboard/${m.entity.entity_id}/team?${invited.invited ? 'invited' : 'added'}=1`, 303);
  });

  app.post('/dashboard/:entity/team/security', { schema: { hide: true, params: EntityParams, body: form } }, async (request, reply) => {
    const m = await admin(request, reply);
    if (!m) return reply;
    const required = (request.body as Record<string, string>).require_second_factor === 'on';
    // Whoever turns it on shows the way: their own sign-in had a second factor (else they would lock themselves out at once).
    if (required && !hasSecondFactor(m.amr)) {
      return teamPage(reply, m, 409, { error: 'Require a second factor: sign in with a second factor yourself first (add an authenticator app to your account, then sign out and in again).' });
    }
    if (required !== m.entity.second_factor_required) await deps.team.setSecondFactorRequired(actionBy(m), required);
    return reply.redirect(`/dashboard/${m.entity.entity_id}/team?security=1`, 303);
  });

  app.post('/dashboard/:entity/team/time-zone', { schema: { hide: true, params: EntityParams, body: form } }, async (request, reply) => {
    const m = await admin(request, reply);
    if (!m) return reply;
    const given = ((request.body as Record<string, string>).time_zone ?? '').trim();
    // Known to Intl (the pages' dates) and to the database (the home page's days).
    const zone = validZone(given) && await deps.team.zoneName(given);
    if (!zone) {
      return teamPage(reply, m, 400, { error: `Time zone: "${given}" is not a time zone name; write one such as Europe/Paris, America/New_York or UTC.` }, { time_zone: given });
    }
    if (zone !== m.entity.time_zone) await deps.team.setTimeZone(actionBy(m), zone);
    return reply.redirect(`/dashboard/${m.entity.entity_id}/team?zone=1`, 303);
  });

  for (const action of ['role', 'remove'] as const) {
    app.post(`/dashboard/:entity/team/:user/${action}`, { schema: { hide: true, params: withUser, body: form } }, async (request, reply) => {
      const m = await admin(request, reply);
      if (!m) return reply;
      const userId = (request.params as { user: string }).user;
      const role = (request.body as Record<string, string>).role;
      if (action === 'role' && !isRole(role)) return teamPage(reply, m, 400, { error: `Role: one of ${ROLES.join(', ')}.` });
      const outcome = await deps.team.change(m.entity.entity_id, userId, action === 'role' ? role as Role : undefined);
      if (outcome === 'not_member') return notFound(reply, m, 'This user is not a member here.', 'team');
      if (outcome === 'last_admin') return teamPage(reply, m, 409, { error: LAST_ADMIN });
      await deps.dashboard.recordPlain(actionBy(m), action === 'role' ? `Change a member's role to ${role}` : 'Remove a member');
      // Removing oneself ends one's access to this entity: back to the entity list.
      if (action === 'remove' && userId === m.userId) return reply.redirect('/dashboard', 303);
      return reply.redirect(`/dashboard/${m.entity.entity_id}/team?${action === 'role' ? 'saved' : 'removed'}=1`, 303);
    });
  }
}
