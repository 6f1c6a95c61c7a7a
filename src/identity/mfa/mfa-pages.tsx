// The second factor's pages (routes: second-step.routes.ts, security.routes.ts,
// security-passkeys.routes.ts): the sign-in's second step, the security page's sign-in
// and the security page with its sections (authenticator app, passkeys, recovery codes)
// and what a change shows (the enrolment of an authenticator app or a passkey, new
// recovery codes). Each form's hidden fields (CSRF token, the authorization request) come
// from LoginPages.fields. A passkey form's options are JSON in an inert element that
// PASSKEY_SCRIPT (payd's own, script-src 'self') reads.
import type { FastifyReply } from 'fastify';
import type { VNode } from 'preact';
import { Alert, Credentials, sendIdpPage } from '../login/pages.ts';
import type { UserRow } from '../idp/idp.service.ts';
import { PASSKEYS, type PasskeyRow } from './passkeys.ts';
import { PASSKEY_SCRIPT_PATH } from './passkey-script.ts';

export const ACCOUNT_SECURITY = '/oauth/account/security';
const PASSKEY_SCRIPTS = [PASSKEY_SCRIPT_PATH];
/** A form's hidden fields, new for each form. */
type Fields = () => VNode;

/** JSON in an element that is never run (type application/json; '<' escaped, so it cannot end the element). Not HTML: put in as the element's text unescaped, since a script element's text is not entity-decoded (TrustedHtml has no script element). */
const inertJson = (value: unknown) => JSON.stringify(value).replace(/</g, '\\u003c');

/** A passkey form's options, its answer's field and its error line (the script fills them). */
const PasskeyParts = ({ options }: { options: unknown }): VNode => (
  <>
    <script type="application/json" data-payd-passkey-options="" dangerouslySetInnerHTML={{ __html: inertJson(options) }} />
    <input type="hidden" name="credential" value="" />
    <p class="payd-error" role="alert" data-payd-passkey-error="" hidden></p>
  </>
);

const day = (d: Date) => d.toISOString().slice(0, 10);

/** The second step: "Use a passkey" when the user has one, and the code form (next: the account page it returns to). */
export function stepPage(reply: FastifyReply, status: number, p: { fields: Fields; next: string | undefined; options: unknown; message: string | undefined }): FastifyReply {
  const fields = () => <>{p.fields()}{p.next ? <input type="hidden" name="next" value={p.next} /> : null}</>;
  return sendIdpPage(reply, status, 'Second step: confirm it is you', (
    <div class="card-box">
      <Alert message={p.message} />
      {p.options ? (
        <>
          <form method="post" action="/oauth/authorize/mfa" class="payd-form" id="passkey-form" data-payd-passkey="get">
            {fields()}
            <PasskeyParts options={p.options} />
            <button type="submit" class="payd-pay">Use a passkey</button>
          </form>
          <p class="muted">Or enter a code:</p>
        </>
      ) : null}
      <form method="post" action="/oauth/authorize/mfa" class="payd-form">
        {fields()}
        <div class="payd-field">
          <label for="code">Code from your authenticator app, or a recovery code</label>
          <input id="code" name="code" autocomplete="one-time-code" inputMode="text" maxLength={40} required autofocus={!p.options} />
        </div>
        <button type="submit" class="payd-pay">Continue</button>
      </form>
    </div>
  ), { scripts: p.options ? PASSKEY_SCRIPTS : [], formAction: 'any' });
}

/** The security page's sign-in. */
export const securityLoginPage = (reply: FastifyReply, status: number, p: { fields: Fields; message: string | undefined }): FastifyReply =>
  sendIdpPage(reply, status, 'Sign in to manage your sign-in security', (
    <div class="card-box">
      <Alert message={p.message} />
      <form method="post" action={`${ACCOUNT_SECURITY}/login`} class="payd-form">
        {p.fields()}
        <Credentials />
        <button type="submit" class="payd-pay">Sign in</button>
      </form>
    </div>
  ));

/** The password field that confirms a change (ids differ per form of the page). */
const Password = ({ id = 'password', label = 'Your password (to confirm it is you)' }: { id?: string; label?: string }): VNode => (
  <div class="payd-field"><label for={id}>{label}</label><input id={id} name="password" type="password" autocomplete="current-password" required /></div>
);

export interface SecurityState {
  user: UserRow;
  totp: 'none' | 'pending' | 'active';
  recoveryLeft: number;
  passkeys: PasskeyRow[];
}

function PasskeySection({ s, fields }: { s: SecurityState; fields: Fields }): VNode {
  const keys = s.passkeys;
  return (
    <section id="passkeys">
      <h2>Passkeys</h2>
      <p id="passkeys-status">Passkeys: <strong>{keys.length ? keys.length : 'none'}</strong>.</p>
      {keys.length ? (
        <ul id="passkey-list">
          {keys.map((k, i) => (
            <li>
              <strong class="passkey-name">{k.name}</strong> <span class="muted">added {day(k.created_at)}, {k.last_used_at ? `last used ${day(k.last_used_at)}` : 'not used yet'}</span>
              <form method="post" action={`${ACCOUNT_SECURITY}/passkeys/remove`} class="payd-form">
                {fields()}<input type="hidden" name="id" value={k.id} />
                <Password id={`password-passkey-${i}`} label={`Your password, to remove ${k.name}`} />
                <button type="submit" class="secondary">Remove {k.name}</button>
              </form>
            </li>
          ))}
        </ul>
      ) : null}
      {keys.length < PASSKEYS.maxPerUser ? (
        <form method="post" action={`${ACCOUNT_SECURITY}/passkeys/start`} class="payd-form">
          {fields()}
          <div class="payd-field"><label for="passkey-name">Name of the passkey</label><input id="passkey-name" name="name" maxLength={PASSKEYS.nameMax} required placeholder="e.g. work laptop" /></div>
          <Password id="password-passkey" label="Confirm with your password" />
          <button type="submit" class="payd-pay">Add a passkey</button>
        </form>
      ) : null}
    </section>
  );
}

/** The security page: who, what a change just showed (`extra`), the authenticator app, passkeys, recovery codes. */
export function securityPage(reply: FastifyReply, status: number, p: { s: SecurityState; fields: Fields; extra?: VNode | undefined; message?: string | undefined; passkeyScript?: boolean }): FastifyReply {
  const { s, fields } = p;
  const totpOn = s.totp === 'active';
  return sendIdpPage(reply, status, 'Sign-in security', (
    <div class="card-box">
      <Alert message={p.message} />
      <p>Signed in as <strong>{s.user.email}</strong>.</p>
      {p.extra ?? null}
      {totpOn ? (
        <>
          <p id="totp-status">Authenticator app: <strong>on</strong>. Unused recovery codes: <span id="recovery-left">{s.recoveryLeft}</span>.</p>
          <form method="post" action={`${ACCOUNT_SECURITY}/totp/remove`} class="payd-form">{fields()}<Password id="password-remove" />
            <button type="submit" class="secondary">Remove the authenticator app</button></form>
        </>
      ) : (
        <>
          <p id="totp-status">Authenticator app: <strong>off</strong>.</p>
          <form method="post" action={`${ACCOUNT_SECURITY}/totp/start`} class="payd-form">{fields()}<Password />
            <button type="submit" class="payd-pay">Add an authenticator app</button></form>
        </>
      )}
      <PasskeySection s={s} fields={fields} />
      {/* The recovery codes belong to the factors together: offered while any is on. */}
      {totpOn || s.passkeys.length ? (
        <form method="post" action={`${ACCOUNT_SECURITY}/recovery`} class="payd-form">
          {fields()}{totpOn ? null : <p id="passkey-recovery-left">Unused recovery codes: {s.recoveryLeft}.</p>}<Password id="password-recovery" />
          <button type="submit" class="secondary">New recovery codes</button>
        </form>
      ) : null}
    </div>
  ), { scripts: p.passkeyScript ? PASSKEY_SCRIPTS : [] });
}

/** An authenticator app being added: its otpauth:// URI and secret, and the form that confirms a current code. */
export const TotpEnrol = ({ uri, secret, fields }: { uri: string; secret: string; fields: Fields }): VNode => (
  <section id="totp-enrol">
    <p>Add this account to your authenticator app: open this link on the device, or type the secret key.</p>
    <p><a id="totp-uri" href={uri}>{uri}</a></p>
    <p>Secret key: <code id="totp-secret">{secret}</code></p>
    <form method="post" action={`${ACCOUNT_SECURITY}/totp/confirm`} class="payd-form">{fields()}
      <div class="payd-field"><label for="code">The code your app shows now</label><input id="code" name="code" inputMode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxLength={6} required /></div>
      <button type="submit" class="payd-pay">Turn on</button></form>
  </section>
);

/** New recovery codes, shown once. */
export const RecoveryCodes = ({ codes }: { codes: string[] }): VNode => (
  <section id="recovery-codes">
    <p role="status">Your recovery codes. Keep them somewhere safe: each works once, and they are not shown again.</p>
    <ul>{codes.map((c) => <li><code>{c}</code></li>)}</ul>
  </section>
);

/** A passkey being added: the browser's create() on the form's submit (PASSKEY_SCRIPT). */
export const PasskeyEnrol = ({ name, options, fields }: { name: string; options: unknown; fields: Fields }): VNode => (
  <section id="passkey-enrol">
    <p>Create the passkey <strong>{name}</strong> with your device or security key.</p>
    <form method="post" action={`${ACCOUNT_SECURITY}/passkeys/finish`} class="payd-form" id="passkey-form" data-payd-passkey="create">{fields()}
      <input type="hidden" name="name" value={name} />
      <PasskeyParts options={options} />
      <button type="submit" class="payd-pay">Create the passkey</button></form>
  </section>
);

/** A status line after a change, then (when given) the new recovery codes. */
export const Done = ({ message, codes }: { message: string; codes?: string[] | undefined }): VNode => (
  <><p role="status">{message}</p>{codes ? <RecoveryCodes codes={codes} /> : null}</>
);
