// The hosted sign-in and sign-up pages (no script; the checkout's look through layout.tsx),
// the error page of an authorization request, and the sign-out pages. LoginPages is what
// the routes of login/, mfa/, federation/ and sdk/ render with; its forms carry the CSRF
// token of idp-cookies.ts.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { VNode } from 'preact';
import { CsrfField } from '../../web/index.ts';
import { safeEqual } from '../../platform/crypto/secrets.ts';
import { type AuthRequest, AuthorizeError, type IdentityService, appendQuery } from '../idp/idp.service.ts';
import { type IdpCookies, idpCookies } from './idp-cookies.ts';
import { Alert, Credentials, ENDS_AT_CLIENT, HiddenFields, RequestFields, refusedPage, requestQuery, sendIdpPage } from './layout.tsx';
import { AccountApps, AccountLogin, ConsentForm, type Grant, consentHowMac } from './account-pages.tsx';

export type AuthType = 'password' | 'signup' | 'sso' | 'social';

export interface LoginPages {
  errorPage(reply: FastifyReply, err: AuthorizeError): FastifyReply;
  /** providers: the social login buttons (upstream providers configured for federation). */
  loginForm(request: FastifyRequest, reply: FastifyReply, r: AuthRequest, appName: string, message?: string, status?: number, providers?: Array<{ id: string; name: string }>): FastifyReply;
  signupForm(request: FastifyRequest, reply: FastifyReply, r: AuthRequest, appName: string, message?: string, status?: number): FastifyReply;
  /** Whether a posted form (request.body) carries the CSRF token of this browser's cookie. */
  csrfOk(request: FastifyRequest, body?: Record<string, string>): boolean;
  /** RP-Initiated Logout not proven to come from the relying party: ask the user (a form posted back with CSRF). */
  logoutConfirm(request: FastifyRequest, reply: FastifyReply, fields: Record<string, string | undefined>): FastifyReply;
  /**
   * The consent page of an application that is not first-party: its name, the scopes
   * still to grant in plain words, Allow / Deny (a form posted back with the CSRF token).
   * `how` (how the user signed in, for the login event) is carried MACed with the session.
   */
  consentForm(request: FastifyRequest, reply: FastifyReply, r: AuthRequest, appName: string, email: string, scopes: string[], how: AuthType, session: string): FastifyReply;
  /** How the user signed in, from a consent form posted with this session (sso when not proven). */
  consentHow(body: Record<string, string>, session: string): AuthType;
  /** The signed-in user's applications (grants), each with a Revoke form. */
  accountApps(request: FastifyRequest, reply: FastifyReply, email: string, grants: Grant[], message?: string): FastifyReply;
  /** The account page's sign-in form (no authorization request). */
  accountLogin(request: FastifyRequest, reply: FastifyReply, message?: string, status?: number): FastifyReply;
  /** The CSRF field and (with r) the authorization request's hidden fields, for a form of another module (the second factor). */
  fields(request: FastifyRequest, reply: FastifyReply, r?: AuthRequest): VNode;
  /** The sign-in session's token of this browser (the signed session cookie). */
  session(request: FastifyRequest): string | undefined;
  setSession(reply: FastifyReply, value: string): void;
  clearSession(reply: FastifyReply): void;
  /** The cookies of the identity provider's pages. */
  readonly cookies: IdpCookies;
}

/** The authorization request carried by a query or a form, or undefined once its error page is sent. */
export async function validatedRequest(identity: IdentityService, pages: LoginPages, reply: FastifyReply, fields: Record<string, unknown>) {
  try {
    return await identity.validate(fields);
  } catch (err) {
    if (err instanceof AuthorizeError) {
      pages.errorPage(reply, err);
      return undefined;
    }
    throw err;
  }
}

function LoginForm({ csrf, r, message, providers }: { csrf: string; r: AuthRequest; message: string | undefined; providers: Array<{ id: string; name: string }> }): VNode {
  const query = requestQuery(r);
  return (
    <div class="card-box">
      <Alert message={message} />
      {providers.length ? (
        <div class="payd-social">
          {providers.map((p) => <p><a class="payd-social-button" href={`/oauth/federation/${encodeURIComponent(p.id)}/start?${query}`}>Continue with {p.name}</a></p>)}
          <p class="muted">or with your email and password:</p>
        </div>
      ) : null}
      <form method="post" action="/oauth/authorize/login" class="payd-form">
        <CsrfField token={csrf} /><RequestFields r={r} />
        <Credentials />
        <button type="submit" class="payd-pay">Sign in</button>
        <button type="submit" name="cancel" value="1" class="secondary" formNoValidate>Cancel</button>
      </form>
      <p><a href={`/oauth/authorize/forgot?${query}`}>Forgot password?</a></p>
      <p><a href={`/oauth/authorize/signup?${query}`}>Create an account</a></p>
    </div>
  );
}

function SignupForm({ csrf, r, message }: { csrf: string; r: AuthRequest; message: string | undefined }): VNode {
  return (
    <div class="card-box">
      <Alert message={message} />
      <form method="post" action="/oauth/authorize/signup" class="payd-form">
        <CsrfField token={csrf} /><RequestFields r={r} />
        <div class="payd-field"><label for="given_name">First name</label><input id="given_name" name="given_name" autocomplete="given-name" maxLength={100} /></div>
        <div class="payd-field"><label for="family_name">Last name</label><input id="family_name" name="family_name" autocomplete="family-name" maxLength={100} /></div>
        <div class="payd-field"><label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required /></div>
        <div class="payd-field"><label for="password">Password (12 characters or more)</label><input id="password" name="password" type="password" autocomplete="new-password" minLength={12} required /></div>
        <button type="submit" class="payd-pay">Create account</button>
      </form>
    </div>
  );
}

const LogoutConfirm = ({ csrf, fields }: { csrf: string; fields: Record<string, string | undefined> }): VNode => (
  <div class="card-box">
    <p>Do you want to sign out of payd?</p>
    <form method="post" action="/oauth/logout" class="payd-form">
      <CsrfField token={csrf} /><HiddenFields fields={fields} />
      <button type="submit" name="confirm" value="1" class="payd-pay">Sign out</button>
    </form>
  </div>
);

/** After a sign-up: the same page whether the address has an account or not (idp/signup.ts). */
export const checkMailPage = (reply: FastifyReply, email: string): FastifyReply => sendIdpPage(reply, 200, 'Check your mail', (
  <div class="card-box">
    <p role="status">Check your mail: we sent a message to {email}.</p>
    <p>If you are new here, it has a link that creates your account (valid 24 hours). If you already have an account, sign in instead.</p>
  </div>
));

/** After a sign-out; refusedUri: a post_logout_redirect_uri that payd did not send the browser back to. */
export const signedOutPage = (reply: FastifyReply, refusedUri?: string): FastifyReply => sendIdpPage(reply, 200, 'You are signed out', (
  <>
    <p role="status">You are signed out.</p>
    {refusedUri ? <p>payd did not send you back to {refusedUri}: it is not an Allowed Callback URL of the application.</p> : null}
  </>
));

export function loginPages(baseUrl: string, csrfKey: Buffer): LoginPages {
  const c = idpCookies(baseUrl, csrfKey);
  const fields = (request: FastifyRequest, reply: FastifyReply, r?: AuthRequest) => <><CsrfField token={c.csrfToken(request, reply)} />{r ? <RequestFields r={r} /> : null}</>;
  return {
    cookies: c,
    errorPage(reply, err) {
      if (err.redirectUri && err.messenger) return reply.redirect(appendQuery(err.redirectUri, { error: 'access_denied' }), 303);
      if (err.redirectUri) {
        return reply.redirect(appendQuery(err.redirectUri, {
          error: err.error, error_description: err.description, ...(err.state ? { state: err.state } : {}), iss: baseUrl,
        }), 303);
      }
      return refusedPage(reply, 'Sign-in request refused', err.description);
    },

    loginForm: (request, reply, r, appName, message, status = 200, providers = []) =>
      sendIdpPage(reply, status, `Sign in to ${appName}`, <LoginForm csrf={c.csrfToken(request, reply)} r={r} message={message} providers={providers} />, { formAction: ENDS_AT_CLIENT }),

    signupForm: (request, reply, r, appName, message, status = 200) =>
      sendIdpPage(reply, status, `Create your ${appName} account`, <SignupForm csrf={c.csrfToken(request, reply)} r={r} message={message} />, { formAction: ENDS_AT_CLIENT }),

    logoutConfirm(request, reply, fields) {
      let target: string[] = [];
      try {
        target = fields.post_logout_redirect_uri ? [new URL(fields.post_logout_redirect_uri).origin] : [];
      } catch { /* not a URL: it will not be redirected to */ }
      return sendIdpPage(reply, 200, 'Sign out?', <LogoutConfirm csrf={c.csrfToken(request, reply)} fields={fields} />, { formAction: target });
    },

    consentForm: (request, reply, r, appName, email, scopes, how, session) =>
      sendIdpPage(reply, 200, `Allow ${appName} to use your account?`, (
        <ConsentForm csrf={c.csrfToken(request, reply)} r={r} appName={appName} email={email} scopes={scopes} how={how} howMac={consentHowMac(csrfKey, how, session)} />
      ), { formAction: ENDS_AT_CLIENT }),

    consentHow(body, session) {
      const how = body.how;
      const known = how === 'password' || how === 'signup' || how === 'sso' || how === 'social';
      return known && body.how_mac && safeEqual(consentHowMac(csrfKey, how, session), body.how_mac) ? how : 'sso';
    },

    accountApps: (request, reply, email, grants, message) =>
      sendIdpPage(reply, 200, 'Your applications', <AccountApps csrf={c.csrfToken(request, reply)} email={email} grants={grants} message={message} />),

    accountLogin: (request, reply, message, status = 200) =>
      sendIdpPage(reply, status, 'Sign in to see your applications', <AccountLogin csrf={c.csrfToken(request, reply)} message={message} />),

    fields,
    csrfOk: (request) => c.csrfOk(request),
    session: (request) => c.session(request),
    setSession: (reply, value) => c.setSession(reply, value),
    clearSession: (reply) => c.clearSession(reply),
  };
}
