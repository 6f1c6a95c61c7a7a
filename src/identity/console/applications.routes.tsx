// The console's applications: the list (its home page, /console) and an application's
// form (Allowed Callback URLs, Allowed Origins, Management API scopes). A change goes
// through the applications service, audited with the administrator; what it refuses is
// shown again with the reason, 400.
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { VNode } from 'preact';
import { Type } from 'typebox';
import { isProblem, PROBLEM_TYPE } from '../../platform/http/problem.ts';
import { CsrfField } from '../../web/index.ts';
import type { IdentityService } from '../idp/idp.service.ts';
import { AUTHORITY, MANAGEMENT_SCOPES } from '../idp/authority.ts';
import { CONSOLE_CLIENT_ID, type ConsoleService } from './console.service.ts';
import { consolePage, expired } from './layout.tsx';
import type { Admin, ConsoleAuth } from './session.routes.tsx';

interface AppForm { client_id: string; name: string; callback_urls: string[]; allowed_origins: string[]; token_endpoint_auth_method: string; management_scopes: string[] }

const lines = (v: string | undefined) => (v ?? '').split(/\r?\n/).map((l) => l.trim()).filter(Boolean);
const Lines = ({ of }: { of: string[] }) => <>{of.map((l, i) => <>{i ? <br /> : null}{l}</>)}</>;

// Management API scopes are granted here (or by the operator API), never through the
// Management API itself (docs/identity.md, Who reaches what).
function ScopesField({ x }: { x: AppForm }): VNode {
  if (x.token_endpoint_auth_method === 'none') return <p class="muted">A public client cannot get Management API scopes.</p>;
  return (
    <fieldset>
      <legend>Management API scopes</legend>
      <input type="hidden" name="scopes_form" value="1" />
      {MANAGEMENT_SCOPES.map((s) => (
        <div class="payd-choice">
          <input type="checkbox" id={`scope-${s}`} name="scope" value={s} checked={x.management_scopes.includes(s)} />
          <label for={`scope-${s}`}><code>{s}</code>: {AUTHORITY[s].reaches}</label>
        </div>
      ))}
    </fieldset>
  );
}

export async function consoleApplicationsRoutes(app: FastifyInstance, deps: { auth: ConsoleAuth; console: ConsoleService; identity: IdentityService }) {
  const { auth } = deps;
  const appForm = (reply: FastifyReply, a: Admin, x: AppForm, message?: string, status = 200) => consolePage(reply, status, { title: `Application: ${x.name}`, email: a.user.email }, <>
    {message ? <p class="payd-error" role="alert">{message}</p> : null}
    <p>Client ID <code>{x.client_id}</code></p>
    <form method="post" action={`/console/applications/${encodeURIComponent(x.client_id)}`} class="payd-form">
      <CsrfField token={a.csrf} />
      <div class="payd-field"><label for="callbacks">Allowed Callback URLs (one per line)</label><textarea id="callbacks" name="callback_urls" rows={4}>{x.callback_urls.join('\n')}</textarea></div>
      <div class="payd-field"><label for="origins">Allowed Origins (one per line)</label><textarea id="origins" name="allowed_origins" rows={3}>{x.allowed_origins.join('\n')}</textarea></div>
      <ScopesField x={x} />
      <button type="submit" class="payd-pay">Save</button>
    </form>
  </>);
  const noSuchApp = (reply: FastifyReply, a: Admin) => consolePage(reply, 404, { title: 'No such application', email: a.user.email }, <p>This application does not exist.</p>);

  app.get('/console', { schema: { hide: true } }, async (request, reply) => {
    const a = await auth.admin(request, reply);
    if (!a) return reply;
    const apps = await deps.console.apps();
    return consolePage(reply, 200, { title: 'Applications', email: a.user.email, csrf: a.csrf }, (
      <div class="table-scroll"><table>
        <caption>Applications</caption>
        <thead><tr><th scope="col">Name</th><th scope="col">Client ID</th><th scope="col">First party</th><th scope="col">Allowed Callback URLs</th><th scope="col">Allowed Origins</th></tr></thead>
        <tbody>{apps.map((x) => (
          <tr>
            <td>{x.client_id === CONSOLE_CLIENT_ID ? x.name : <a href={`/console/applications/${encodeURIComponent(x.client_id)}`}>{x.name}</a>}</td>
            <td><code>{x.client_id}</code></td><td>{x.first_party ? 'yes' : 'no'}</td><td><Lines of={x.callback_urls} /></td><td><Lines of={x.allowed_origins} /></td>
          </tr>
        ))}</tbody>
      </table></div>
    ));
  });

  const AppParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) });
  app.get<{ Params: { id: string } }>('/console/applications/:id', { schema: { hide: true, params: AppParams } }, async (request, reply) => {
    const a = await auth.admin(request, reply);
    if (!a) return reply;
    const x = await deps.console.app(request.params.id);
    return x ? appForm(reply, a, x) : noSuchApp(reply, a);
  });

  app.post<{ Params: { id: string } }>('/console/applications/:id', {
    // `scope` repeats (one per checked box).
    schema: { hide: true, params: AppParams, body: Type.Record(Type.String(), Type.Union([Type.String({ maxLength: 50_000 }), Type.Array(Type.String({ maxLength: 100 }), { maxItems: 50 })])) },
  }, async (request, reply) => {
    const a = await auth.admin(request, reply);
    if (!a) return reply;
    if (!auth.csrfOk(request, a)) return consolePage(reply, 403, { title: 'Refused', email: a.user.email }, expired());
    const x = await deps.console.app(request.params.id);
    if (!x) return noSuchApp(reply, a);
    const body = request.body as Record<string, string | string[]>;
    const text = (v: string | string[] | undefined) => (Array.isArray(v) ? v.join('\n') : v);
    const checked = ([] as string[]).concat(body.scope ?? []);
    const unknown = checked.find((s) => !(MANAGEMENT_SCOPES as readonly string[]).includes(s));
    const patch = {
      callback_urls: lines(text(body.callback_urls)), allowed_origins: lines(text(body.allowed_origins)),
      ...(body.scopes_form && x.token_endpoint_auth_method !== 'none' ? { management_scopes: [...new Set(checked)] } : {}),
    };
    if (unknown !== undefined) return appForm(reply, a, { ...x, ...patch }, `${unknown} is not a Management API scope.`, 400);
    if (patch.callback_urls.length === 0) return appForm(reply, a, { ...x, ...patch }, 'At least one Allowed Callback URL is needed.', 400);
    try {
      await deps.identity.applications.update(x.client_id, patch, { via: 'console', name: a.user.email });
    } catch (err) {
      if (isProblem(err, PROBLEM_TYPE.invalidRequest)) return appForm(reply, a, { ...x, ...patch }, err.detail, 400);
      throw err;
    }
    return reply.redirect('/console', 303);
  });
}
