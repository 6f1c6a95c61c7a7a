// The console's Profiles (users): the list, a profile with its Recent Activity, "Log in
// as" (through the Management API's login-as, recorded with the administrator) and the
// removal of a lost second factor.
import type { FastifyInstance, FastifyReply } from 'fastify';
import { Type } from 'typebox';
import { Problem } from '../../platform/http/problem.ts';
import { Uuid } from '../../platform/http/schemas.ts';
import { CsrfField } from '../../web/index.ts';
import type { IdentityService } from '../idp/idp.service.ts';
import type { ManagementService } from '../idp/management.ts';
import { CONSOLE_CLIENT_ID, type ConsoleService } from './console.service.ts';
import { consolePage, expired } from './layout.tsx';
import type { Admin, ConsoleAuth } from './session.routes.tsx';

type Event = Awaited<ReturnType<IdentityService['events']>>[number];
const fullName = (u: { given_name: string | null; family_name: string | null }) => [u.given_name, u.family_name].filter(Boolean).join(' ');

const Activity = ({ ev }: { ev: Event }) => (
  <li>
    <time datetime={ev.date.toISOString()}>{ev.date.toISOString()}</time> {ev.type} ({ev.auth_type}{ev.amr?.length ? `, ${ev.amr.join(' + ')}` : ''}{ev.second_factor ? `, ${ev.second_factor}` : ''}{ev.login_as_profile_id ? ` by ${ev.login_as_profile_id}` : ''})
  </li>
);

export async function consoleUsersRoutes(app: FastifyInstance, deps: { auth: ConsoleAuth; console: ConsoleService; identity: IdentityService; management: ManagementService }) {
  const { auth } = deps;
  const noSuchProfile = (reply: FastifyReply, a: Admin) => consolePage(reply, 404, { title: 'No such profile', email: a.user.email }, <p>This user does not exist.</p>);

  app.get('/console/users', { schema: { hide: true } }, async (request, reply) => {
    const a = await auth.admin(request, reply);
    if (!a) return reply;
    const users = await deps.management.users(200);
    return consolePage(reply, 200, { title: 'Profiles', email: a.user.email, csrf: a.csrf },
      <ul>{users.map((u) => <li><a href={`/console/users/${u.id}`}>{u.email}</a> {fullName(u)}{u.blocked ? ' (blocked)' : ''}</li>)}</ul>);
  });

  const UserParams = Type.Object({ id: Uuid() });
  app.get<{ Params: { id: string } }>('/console/users/:id', { schema: { hide: true, params: UserParams } }, async (request, reply) => {
    const a = await auth.admin(request, reply);
    if (!a) return reply;
    const user = await deps.console.user(request.params.id);
    if (!user) return noSuchProfile(reply, a);
    const events = await deps.identity.events(user.id);
    const apps = (await deps.console.apps()).filter((x) => x.first_party && x.client_id !== CONSOLE_CLIENT_ID);
    const hasFactor = await deps.console.hasSecondFactor(user.id);
    const formOrigins = apps.flatMap((x) => x.callback_urls.map((cb) => new URL(cb).origin));
    return consolePage(reply, 200, { title: `Profile: ${user.email}`, email: a.user.email, csrf: a.csrf, formOrigins }, <>
      <p>{fullName(user)} · email {user.email_verified ? 'verified' : 'not verified'}{user.blocked ? ' · blocked' : ''}</p>
      <h2>Log in as</h2>
      <form method="post" action={`/console/users/${user.id}/login-as`} class="payd-form">
        <CsrfField token={a.csrf} />
        <div class="payd-field"><label for="target">Application and redirect URL</label><select id="target" name="target" required>
          {apps.flatMap((x) => x.callback_urls.map((cb) => <option value={`${x.client_id} ${cb}`}>{x.name}: {cb}</option>))}
        </select></div>
        <fieldset><legend>Response type</legend>
          <div class="payd-choice"><input type="radio" id="rt-code" name="response_type" value="code" checked /><label for="rt-code">code</label></div>
          <div class="payd-choice"><input type="radio" id="rt-token" name="response_type" value="token" /><label for="rt-token">token</label></div>
        </fieldset>
        <button type="submit" class="payd-pay">Log in as {user.email}</button>
      </form>
      <h2>Second factor</h2>
      {hasFactor ? <>
        <p id="second-factor">Authenticator app: <strong>on</strong>.</p>
        <form method="post" action={`/console/users/${user.id}/second-factor/remove`} class="payd-form">
          <CsrfField token={a.csrf} />
          <p class="muted">For a user who lost their authenticator app and recovery codes: they sign in with the password alone next time, and add a new one (a team or this console that requires one asks them to).</p>
          <button type="submit" class="secondary">Remove {user.email}'s second factor</button>
        </form>
      </> : <p id="second-factor">Authenticator app: <strong>off</strong>.</p>}
      <h2>Recent Activity</h2>
      <ul id="recent-activity">{events.length ? events.map((ev) => <Activity ev={ev} />) : <li>No activity yet.</li>}</ul>
    </>);
  });

  // A lost second factor: an administrator removes it (recorded as an event of the user, by whom).
  app.post<{ Params: { id: string } }>('/console/users/:id/second-factor/remove', {
    schema: { hide: true, params: UserParams, body: Type.Record(Type.String(), Type.String({ maxLength: 1000 })) },
  }, async (request, reply) => {
    const a = await auth.admin(request, reply);
    if (!a) return reply;
    if (!auth.csrfOk(request, a)) return consolePage(reply, 403, { title: 'Refused', email: a.user.email }, expired());
    const user = await deps.console.user(request.params.id);
    if (!user) return noSuchProfile(reply, a);
    await deps.console.removeSecondFactor(user.id, { id: a.user.id, email: a.user.email });
    return reply.redirect(`/console/users/${user.id}`, 303);
  });

  app.post<{ Params: { id: string } }>('/console/users/:id/login-as', {
    schema: { hide: true, params: UserParams, body: Type.Record(Type.String(), Type.String({ maxLength: 4096 })) },
  }, async (request, reply) => {
    const a = await auth.admin(request, reply);
    if (!a) return reply;
    if (!auth.csrfOk(request, a)) return consolePage(reply, 403, { title: 'Refused', email: a.user.email }, expired());
    const body = request.body as Record<string, string>;
    const [clientId, redirectUri] = (body.target ?? '').split(' ');
    try {
      const { redirect_url } = await deps.management.loginAs({
        userId: request.params.id, clientId: clientId ?? '', redirectUri: redirectUri ?? '', responseType: body.response_type === 'token' ? 'token' : 'code', name: a.user.email, by: { consoleUser: a.user.id },
      });
      return reply.redirect(redirect_url, 303);
    } catch (err) {
      if (err instanceof Problem && err.status < 500) return consolePage(reply, err.status, { title: 'Log in as refused', email: a.user.email }, <p role="alert">{err.detail ?? err.title}</p>);
      throw err;
    }
  });
}
