// The Team page (admins): the invitation link shown once, the invitation form, the members
// (role, removal), the invitations waiting for their link, the merchant's time zone and
// the team's sign-in security.
import type { VNode } from 'preact';
import { ROLES, type Member as TeamMember, type Role } from './members.ts';
import type { Member } from './auth.routes.ts';
import { Messages, PostForm, Table } from './parts.tsx';
import { ZONES, roleLabel, when } from './views.ts';

export interface TeamMessage { notice?: string; error?: string; link?: { email: string; url: string } }

const RoleOptions = ({ current }: { current: Role }) => <>{ROLES.map((r) => <option value={r} selected={r === current}>{roleLabel[r]}</option>)}</>;

function InvitationLink({ email, url }: { email: string; url: string }): VNode {
  return (
    <section class="notice" aria-labelledby="invitation-link-title">
      <h2 id="invitation-link-title">Invitation link for {email}</h2>
      <p>Shown this once: payd keeps only a hash of it. It lets whoever holds it choose the password of this account within 7 days, once; give it to {email} only, if the mail does not reach them.</p>
      <label for="invitation-link">Invitation link</label><input id="invitation-link" readonly value={url} />
    </section>
  );
}

export interface TeamProps {
  m: Member;
  members: TeamMember[];
  pending: Array<{ email: string; role: Role; created_at: Date }>;
  message?: TeamMessage | undefined;
  values: Record<string, string>;
}

export function TeamBody({ m, members, pending, message, values }: TeamProps): VNode {
  const base = `/dashboard/${m.entity.entity_id}/team`;
  const zone = m.entity.time_zone;
  const rows = members.map((x, i) => (
    <tr>
      <td>{x.email}{x.user_id === m.userId ? ' (you)' : ''}</td><td>{when(x.created_at, zone)}</td>
      <td>{x.has_second_factor ? 'On' : <strong>Off</strong>}</td>
      <td>
        <PostForm action={`${base}/${x.user_id}/role`} csrf={m.csrf} class="inline">
          <label for={`role-${i}`} class="visually-hidden">Role of {x.email}</label><select id={`role-${i}`} name="role"><RoleOptions current={x.role} /></select>{' '}
          <button type="submit" class="secondary">Save</button>
        </PostForm>
      </td>
      <td><PostForm action={`${base}/${x.user_id}/remove`} csrf={m.csrf}><button type="submit" class="danger" aria-label={`Remove ${x.email}`}>Remove</button></PostForm></td>
    </tr>
  ));
  return (
    <>
      <Messages notice={message?.notice} error={message?.error} />
      {message?.link ? <InvitationLink {...message.link} /> : null}
      <h2>Invite someone</h2>
      <p>An address without a payd account gets a link to choose a password (valid 7 days, once): by mail, and on this page once.</p>
      <PostForm action={base} csrf={m.csrf} class="filters">
        <div><label for="invite-email">Email</label><input id="invite-email" name="email" type="email" required maxlength={254} value={values.email ?? ''} /></div>
        <div><label for="invite-role">Role</label><select id="invite-role" name="role"><RoleOptions current={(values.role ?? 'viewer') as Role} /></select></div>
        <div><button type="submit">Invite</button></div>
      </PostForm>
      <h2>Members</h2>
      <p>Admin: API keys, webhooks and the team, and everything an operator does. Operator: capture, refund, void, payment links. Viewer: read only.</p>
      <Table label="Members" cols={['Email', 'Member since', 'Second factor', 'Role', 'Actions']} rows={rows} />
      {pending.length ? (
        <>
          <h2>Waiting for their link</h2>
          <p>These addresses already had a payd account: they become members once their owner chooses a new password with the invitation link (7 days).</p>
          <ul id="pending-invitations">{pending.map((x) => <li>{x.email}, {roleLabel[x.role]}, invited {when(x.created_at, zone)}</li>)}</ul>
        </>
      ) : null}
      <h2>Time zone</h2>
      <PostForm action={`${base}/time-zone`} csrf={m.csrf}>
        <label for="time-zone">Time zone of {m.entity.entity_name} (an IANA name such as Europe/Paris)</label>
        <input id="time-zone" name="time_zone" required maxlength={64} list="time-zones" autocomplete="off" value={values.time_zone ?? zone} />
        <datalist id="time-zones">{ZONES.map((z) => <option value={z} />)}</datalist>
        <p class="hint">Every date of this dashboard is shown in it, the home page's days and the payments' date filters are its days, and the CSV export has a column in it.</p>
        <button type="submit" class="secondary">Save the time zone</button>
      </PostForm>
      <h2>Sign-in security</h2>
      <PostForm action={`${base}/security`} csrf={m.csrf}>
        <p>
          <input type="checkbox" id="require-second-factor" name="require_second_factor" value="on" checked={m.entity.second_factor_required} />{' '}
          <label for="require-second-factor">Require a second factor (an authenticator app) for everyone on this team</label>
        </p>
        <p class="muted">Members who signed in without one see nothing of {m.entity.entity_name} until they add one and sign in again, and cannot remove their last one while this is on.</p>
        <button type="submit" class="secondary">Save</button>
      </PostForm>
    </>
  );
}
