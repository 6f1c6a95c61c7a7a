// The dashboard's Team page (admins): who may use this entity's dashboard, invite someone
// (an address without an account gets one and a mail to choose a password, as through the
// operator API: the same inviteMember), change a role, remove a member. The entity keeps
// at least one admin (checked under a lock of its member rows: membersRepo.change).
import type { FastifyInstance, FastifyReply } from 'fastify';
import { Type } from 'typebox';
import { Problem } from '../platform/http/problem.ts';
import { escapeHtml as e } from '../checkout/pages.ts';
import { ROLES, type Role, membersRepo } from './members.ts';
import { type MembersDeps, inviteMember } from './members.routes.ts';
import type { ExtraDeps, Member } from './links-keys.routes.ts';
import { ZONES, page, roleLabel, validZone, when } from './views.ts';
import { hasSecondFactor } from '../identity/mfa/amr.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const LAST_ADMIN = 'An entity keeps at least one admin: make another member admin first.';

export type TeamPageDeps = MembersDeps & Pick<ExtraDeps, 'member' | 'csrfOk'>;

export async function teamPageRoutes(app: FastifyInstance, deps: TeamPageDeps) {
  const params = Type.Object({ entity: Type.String({ pattern: UUID.source }) });
  const withUser = Type.Object({ entity: Type.String({ pattern: UUID.source }), user: Type.String({ pattern: UUID.source }) });
  const form = Type.Record(Type.String(), Type.String({ maxLength: 300 }));
  const layout = (m: Member, title: string) => ({ title, email: m.email, csrf: m.csrf, memberships: m.memberships, entity: m.entity, current: 'team' as const });
  const csrfField = (m: Member) => `<input type="hidden" name="csrf" value="${e(m.csrf)}">`;
  const roleSelect = (id: string, current: Role, label: string) =>
    `<label for="${id}" class="visually-hidden">${e(label)}</label><select id="${id}" name="role">${ROLES.map((r) => `<option value="${r}"${r === current ? ' selected' : ''}>${e(roleLabel[r])}</option>`).join('')}</select>`;

  const teamPage = async (reply: FastifyReply, m: Member, status = 200, message?: { notice?: string; error?: string; link?: { email: string; url: string } }, values: Record<string, string> = {}) => {
    const base = `/dashboard/${m.entity.entity_id}/team`;
    const members = await membersRepo.of(deps.db, m.entity.entity_id);
    const pending = await membersRepo.pendingOf(deps.db, m.entity.entity_id);
    const rows = members.map((x, i) => `<tr><td>${e(x.email)}${x.user_id === m.userId ? ' (you)' : ''}</td><td>${e(when(x.created_at, m.entity.time_zone))}</td>
<td>${x.has_second_factor ? 'On' : '<strong>Off</strong>'}</td>
<td><form method="post" action="${base}/${e(x.user_id)}/role" class="inline" data-once>${csrfField(m)}${roleSelect(`role-${i}`, x.role, `Role of ${x.email}`)} <button type="submit" class="secondary">Save</button></form></td>
<td><form method="post" action="${base}/${e(x.user_id)}/remove" data-once>${csrfField(m)}<button type="submit" class="danger" aria-label="Remove ${e(x.email)}">Remove</button></form></td></tr>`).join('');
    return page(reply, status, layout(m, 'Team'), `
${message?.notice ? `<p class="notice" role="status">${e(message.notice)}</p>` : ''}${message?.error ? `<div class="error" role="alert">${e(message.error)}</div>` : ''}${message?.link ? `
<section class="notice" aria-labelledby="invitation-link-title"><h2 id="invitation-link-title">Invitation link for ${e(message.link.email)}</h2>
<p>Shown this once: payd keeps only a hash of it. It lets whoever holds it choose the password of this account within 7 days, once; give it to ${e(message.link.email)} only, if the mail does not reach them.</p>
<label for="invitation-link">Invitation link</label><input id="invitation-link" readonly value="${e(message.link.url)}"></section>` : ''}
<h2>Invite someone</h2>
<p>An address without a payd account gets a link to choose a password (valid 7 days, once): by mail, and on this page once.</p>
<form method="post" action="${base}" class="filters" data-once>${csrfField(m)}
<div><label for="invite-email">Email</label><input id="invite-email" name="email" type="email" required maxlength="254" value="${e(values.email ?? '')}"></div>
<div><label for="invite-role">Role</label><select id="invite-role" name="role">${ROLES.map((r) => `<option value="${r}"${(values.role ?? 'viewer') === r ? ' selected' : ''}>${e(roleLabel[r])}</option>`).join('')}</select></div>
<div><button type="submit">Invite</button></div>
</form>
<h2>Members</h2>
<p>Admin: API keys, webhooks and the team, and everything an operator does. Operator: capture, refund, void, payment links. Viewer: read only.</p>
<div class="table-wrap" role="region" tabindex="0" aria-label="Members (scrolls sideways on small screens)"><table aria-label="Members">
<thead><tr><th scope="col">Email</th><th scope="col">Member since</th><th scope="col">Second factor</th><th scope="col">Role</th><th scope="col">Actions</th></tr></thead>
<tbody>${rows}</tbody></table></div>${pending.length ? `
<h2>Waiting for their link</h2>
<p>These addresses already had a payd account: they become members once their owner chooses a new password with the invitation link (7 days).</p>
<ul id="pending-invitations">${pending.map((x) => `<li>${e(x.email)}, ${e(roleLabel[x.role])}, invited ${e(when(x.created_at, m.entity.time_zone))}</li>`).join('')}</ul>` : ''}
<h2>Time zone</h2>
<form method="post" action="${base}/time-zone" data-once>${csrfField(m)}
<label for="time-zone">Time zone of ${e(m.entity.entity_name)} (an IANA name such as Europe/Paris)</label>
<input id="time-zone" name="time_zone" required maxlength="64" list="time-zones" autocomplete="off" value="${e(values.time_zone ?? m.entity.time_zone)}">
<datalist id="time-zones">${ZONES.map((z) => `<option value="${e(z)}">`).join('')}</datalist>
<p class="hint">Every date of this dashboard is shown in it, the home page's days and the payments' date filters are its days, and the CSV export has a column in it.</p>
<button type="submit" class="secondary">Save the time zone</button></form>
<h2>Sign-in security</h2>
<form method="post" action="${base}/security" data-once>${csrfField(m)}
<p><input type="checkbox" id="require-second-factor" name="require_second_factor" value="on"${m.entity.second_factor_required ? ' checked' : ''}>
<label for="require-second-factor">Require a second factor (an authenticator app) for everyone on this team</label></p>
<p class="muted">Members who signed in without one see nothing of ${e(m.entity.entity_name)} until they add one and sign in again, and cannot remove their last one while this is on.</p>
<button type="submit" class="secondary">Save</button></form>`);
  };

  app.get('/dashboard/:entity/team', { schema: { hide: true, params } }, async (request, reply) => {
    const m = await deps.member(request, reply, 'admin');
    if (!m) return reply;
    const q = request.query as Record<string, unknown>;
    const notice = q.invited === '1' ? 'Invited: a mail asks them to choose a password.' : q.added === '1' ? 'Added: they can sign in now.'
      : q.saved === '1' ? 'The role is changed.' : q.zone === '1' ? `The time zone is saved: ${m.entity.time_zone}.` : q.security === '1' ? 'Sign-in security is saved.' : q.removed === '1' ? 'The member is removed.' : undefined;
    return teamPage(reply, m, 200, notice ? { notice } : undefined);
  });

  app.post('/dashboard/:entity/team', { schema: { hide: true, params, body: form } }, async (request, reply) => {
    const m = await deps.member(request, reply, 'admin');
    if (!m) return reply;
    if (!deps.csrfOk(request, m)) return page(reply, 403, layout(m, 'Form expired'), '<p role="alert">The form expired or did not come from this dashboard. Reload the page and try again.</p>');
    const b = request.body as Record<string, string>;
    const email = (b.email ?? '').trim();
    if (!EMAIL.test(email) || email.length > 254) return teamPage(reply, m, 400, { error: 'Email: an address such as olga@shop.example.' }, b);
    if (!(ROLES as readonly string[]).includes(b.role ?? '')) return teamPage(reply, m, 400, { error: `Role: one of ${ROLES.join(', ')}.` }, b);
    let invited;
    try {
      // A merchant's admin cannot vouch for an existing account (members.routes.ts, inviteMember).
      invited = await inviteMember(deps, m.entity.entity_id, email, b.role as Role, m.email, { trustExistingAccount: false });
    } catch (err) {
      if (err instanceof Problem && err.status < 500) return teamPage(reply, m, err.status, { error: err.detail ?? err.title }, b);
      throw err;
    }
    await membersRepo.recordAction(deps.db, { entity_id: m.entity.entity_id, user_id: m.userId, user_email: m.email, action: `Invite ${email} as ${b.role}`, payment_id: null, idempotency_key: null, amount: null });
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

  app.post('/dashboard/:entity/team/security', { schema: { hide: true, params, body: form } }, async (request, reply) => {
    const m = await deps.member(request, reply, 'admin');
    if (!m) return reply;
    if (!deps.csrfOk(request, m)) return page(reply, 403, layout(m, 'Form expired'), '<p role="alert">The form expired or did not come from this dashboard. Reload the page and try again.</p>');
    const required = (request.body as Record<string, string>).require_second_factor === 'on';
    // Whoever turns it on shows the way: their own sign-in had a second factor (else they would lock themselves out at once).
    if (required && !hasSecondFactor(m.amr)) {
      return teamPage(reply, m, 409, { error: 'Require a second factor: sign in with a second factor yourself first (add an authenticator app to your account, then sign out and in again).' });
    }
    if (required !== m.entity.second_factor_required) {
      await deps.db.transaction(async (tx) => {
        await membersRepo.setSecondFactorRequired(tx, m.entity.entity_id, required, m.userId);
        await membersRepo.recordAction(tx, { entity_id: m.entity.entity_id, user_id: m.userId, user_email: m.email, action: required ? 'Require a second factor for the team' : 'Stop requiring a second factor', payment_id: null, idempotency_key: null, amount: null });
      });
    }
    return reply.redirect(`/dashboard/${m.entity.entity_id}/team?security=1`, 303);
  });

  app.post('/dashboard/:entity/team/time-zone', { schema: { hide: true, params, body: form } }, async (request, reply) => {
    const m = await deps.member(request, reply, 'admin');
    if (!m) return reply;
    if (!deps.csrfOk(request, m)) return page(reply, 403, layout(m, 'Form expired'), '<p role="alert">The form expired or did not come from this dashboard. Reload the page and try again.</p>');
    const given = ((request.body as Record<string, string>).time_zone ?? '').trim();
    // Known to Intl (the pages' dates) and to the database (the home page's days).
    const zone = validZone(given) && await membersRepo.zoneName(deps.db, given);
    if (!zone) {
      return teamPage(reply, m, 400, { error: `Time zone: "${given}" is not a time zone name; write one such as Europe/Paris, America/New_York or UTC.` }, { time_zone: given });
    }
    if (zone !== m.entity.time_zone) {
      await deps.db.transaction(async (tx) => {
        await membersRepo.setTimeZone(tx, m.entity.entity_id, zone, m.userId);
        await membersRepo.recordAction(tx, { entity_id: m.entity.entity_id, user_id: m.userId, user_email: m.email, action: `Set the time zone to ${zone}`, payment_id: null, idempotency_key: null, amount: null });
      });
    }
    return reply.redirect(`/dashboard/${m.entity.entity_id}/team?zone=1`, 303);
  });

  for (const action of ['role', 'remove'] as const) {
    app.post(`/dashboard/:entity/team/:user/${action}`, { schema: { hide: true, params: withUser, body: form } }, async (request, reply) => {
      const m = await deps.member(request, reply, 'admin');
      if (!m) return reply;
      if (!deps.csrfOk(request, m)) return page(reply, 403, layout(m, 'Form expired'), '<p role="alert">The form expired or did not come from this dashboard. Reload the page and try again.</p>');
      const userId = (request.params as { user: string }).user;
      const role = (request.body as Record<string, string>).role;
      if (action === 'role' && !(ROLES as readonly string[]).includes(role ?? '')) return teamPage(reply, m, 400, { error: `Role: one of ${ROLES.join(', ')}.` });
      const outcome = await membersRepo.change(deps.db, m.entity.entity_id, userId, action === 'role' ? role as Role : undefined);
      if (outcome === 'not_member') return page(reply, 404, layout(m, 'Not found'), '<p>This user is not a member here.</p>');
      if (outcome === 'last_admin') return teamPage(reply, m, 409, { error: LAST_ADMIN });
      await membersRepo.recordAction(deps.db, { entity_id: m.entity.entity_id, user_id: m.userId, user_email: m.email, action: action === 'role' ? `Change a member's role to ${role}` : 'Remove a member', payment_id: null, idempotency_key: null, amount: null });
      // Removing oneself ends one's access to this entity: back to the entity list.
      if (action === 'remove' && userId === m.userId) return reply.redirect('/dashboard', 303);
      return reply.redirect(`/dashboard/${m.entity.entity_id}/team?${action === 'role' ? 'saved' : 'removed'}=1`, 303);
    });
  }
}
