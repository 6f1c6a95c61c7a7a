// The consent page, and the signed-in user's page of the applications they allowed (with
// its own sign-in form). Rendered by login-pages.tsx (LoginPages); routes in consent.routes.ts.
import type { VNode } from 'preact';
import { CsrfField, csrfToken } from '../../web/index.ts';
import { type AuthRequest, SCOPE_WORDS } from '../idp/idp.service.ts';
import { Alert, Credentials, RequestFields } from './layout.tsx';

export interface Grant { client_id: string; name: string; scopes: string[]; updated_at: Date }

/** How the user signed in, carried by the consent form, bound to the session (the web layer's token of both). */
export const consentHowMac = (key: Buffer, how: string, session: string): string => csrfToken(key, `consent-how.${how}.${session}`);

const Scopes = ({ scopes, id }: { scopes: string[]; id?: string }): VNode => <ul id={id}>{scopes.map((s) => <li>{SCOPE_WORDS[s] ?? s}</li>)}</ul>;

export const ConsentForm = (p: { csrf: string; r: AuthRequest; appName: string; email: string; scopes: string[]; how: string; howMac: string }): VNode => (
  <div class="card-box">
    <p>You are signed in as <strong>{p.email}</strong>. <strong>{p.appName}</strong> asks to:</p>
    <Scopes id="consent-scopes" scopes={p.scopes} />
    <form method="post" action="/oauth/authorize/consent" class="payd-form">
      <CsrfField token={p.csrf} /><RequestFields r={p.r} />
      <input type="hidden" name="how" value={p.how} /><input type="hidden" name="how_mac" value={p.howMac} />
      <button type="submit" name="decision" value="allow" class="payd-pay">Allow</button>
      <button type="submit" name="decision" value="deny" class="secondary">Deny</button>
    </form>
    <p class="muted">You can withdraw this at any time on <a href="/oauth/account/applications">your applications</a> page.</p>
  </div>
);

export const AccountApps = ({ csrf, email, grants, message }: { csrf: string; email: string; grants: Grant[]; message: string | undefined }): VNode => (
  <div class="card-box">
    {message ? <p role="status">{message}</p> : null}
    <p>Signed in as <strong>{email}</strong>. Applications you allowed to use your account:</p>
    <ul id="granted-apps">
      {grants.length ? grants.map((g) => (
        <li>
          <strong>{g.name}</strong> <span class="muted">since {g.updated_at.toISOString().slice(0, 10)}</span>
          <Scopes scopes={g.scopes} />
          <form method="post" action="/oauth/account/applications/revoke" class="payd-form">
            <CsrfField token={csrf} /><input type="hidden" name="client_id" value={g.client_id} />
            <button type="submit" class="secondary">Revoke access of {g.name}</button>
          </form>
        </li>
      )) : <li>None.</li>}
    </ul>
  </div>
);

export const AccountLogin = ({ csrf, message, action = '/oauth/account/login' }: { csrf: string; message: string | undefined; action?: string }): VNode => (
  <div class="card-box">
    <Alert message={message} />
    <form method="post" action={action} class="payd-form">
      <CsrfField token={csrf} />
      <Credentials />
      <button type="submit" class="payd-pay">Sign in</button>
    </form>
  </div>
);
