// The hosted sign-in and sign-up pages (server-rendered, no script; the checkout's page
// layout: labels, visible focus, viewport meta, strict CSP), their CSRF protection and
// the cookies. CSRF: the cookie payd_idp_csrf holds a random nonce (HttpOnly,
// SameSite=Lax, path /oauth); the form carries HMAC(key, nonce), which only payd can
// compute, so a form posted from elsewhere, or without the cookie, is refused.
import { createHmac, randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { safeEqual } from '../../platform/crypto/secrets.ts';
import { escapeHtml, sendPage } from '../../checkout/pages.ts';
import { type AuthRequest, AuthorizeError, type IdentityService, SCOPE_WORDS, appendQuery } from '../idp/idp.service.ts';

export const SESSION_COOKIE = 'payd_idp_session';
const SESSION_PATHS = ['/oauth', '/identity'] as const;
const CSRF_COOKIE = 'payd_idp_csrf';
const REQUEST_FIELDS = ['client_id', 'redirect_uri', 'response_type', 'scope', 'state', 'nonce', 'code_challenge', 'code_challenge_method', 'account_linking_token', 'prompt'] as const;
/** A field of the authorization request as the forms carry it (prompt: its values, space-separated). */
const fieldOf = (r: AuthRequest, k: (typeof REQUEST_FIELDS)[number]): string | undefined => {
  const v = r[k];
  return Array.isArray(v) ? (v.length ? v.join(' ') : undefined) : v;
};
export type AuthType = 'password' | 'signup' | 'sso' | 'social';

export function cookies(request: FastifyRequest): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i <= 0) continue;
    try {
      out[part.slice(0, i).trim()] = decodeURIComponent(part.slice(i + 1).trim());
    } catch { /* a malformed cookie is no cookie */ }
  }
  return out;
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

export interface LoginPages {
  errorPage(reply: FastifyReply, err: AuthorizeError): FastifyReply;
  /** providers: the social login buttons (upstream providers configured for federation). */
  loginForm(request: FastifyRequest, reply: FastifyReply, r: AuthRequest, appName: string, message?: string, status?: number, providers?: Array<{ id: string; name: string }>): FastifyReply;
  signupForm(request: FastifyRequest, reply: FastifyReply, r: AuthRequest, appName: string, message?: string, status?: number): FastifyReply;
  /** Whether a posted form carries the CSRF token of this browser's cookie. */
  csrfOk(request: FastifyRequest, body: Record<string, string>): boolean;
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
  accountApps(request: FastifyRequest, reply: FastifyReply, email: string, grants: Array<{ client_id: string; name: string; scopes: string[]; updated_at: Date }>, message?: string): FastifyReply;
  /** The account page's sign-in form (no authorization request). */
  accountLogin(request: FastifyRequest, reply: FastifyReply, message?: string, status?: number): FastifyReply;
  /** The CSRF field and (with r) the authorization request's hidden fields, for a form of another module (the second factor). */
  formFields(request: FastifyRequest, reply: FastifyReply, r?: AuthRequest): string;
  setSession(reply: FastifyReply, value: string): void;
  clearSession(reply: FastifyReply): void;
}

export function loginPages(baseUrl: string, csrfKey: Buffer): LoginPages {
  const secure = baseUrl.startsWith('https://') ? '; Secure' : '';
  // The session cookie is read cross-site by the identity SDK (sso/data, checkSession's
  // hidden frame) when the shop is on another site: SameSite=None over https (None needs
  // Secure); Lax over http. Every form that acts on the session carries the CSRF token
  // (its own Lax cookie), so nothing relies on the session cookie's SameSite.
  const sessionSameSite = secure ? 'SameSite=None' : 'SameSite=Lax';
  const csrfFor = (nonce: string) => createHmac('sha256', csrfKey).update(`idp-csrf:${nonce}`).digest('base64url');

  /** The browser's CSRF nonce (kept while valid, so that two open tabs both work), or a new one. */
  const csrfToken = (request: FastifyRequest, reply: FastifyReply) => {
    let nonce = cookies(request)[CSRF_COOKIE];
    if (!nonce || !/^[A-Za-z0-9_-]{22}$/.test(nonce)) {
      nonce = randomBytes(16).toString('base64url');
      reply.header('set-cookie', `${CSRF_COOKIE}=${nonce}; HttpOnly; SameSite=Lax; Path=/oauth${secure}`);
    }
    return csrfFor(nonce);
  };
  const hidden = (r: AuthRequest) => REQUEST_FIELDS.map((k) => (fieldOf(r, k) ? `<input type="hidden" name="${k}" value="${escapeHtml(fieldOf(r, k)!)}">` : '')).join('');
  const howMac = (how: string, session: string) => createHmac('sha256', csrfKey).update(`consent-how:${how}:${session}`).digest('base64url');
  const words = (scopes: string[]) => scopes.map((s) => `<li>${escapeHtml(SCOPE_WORDS[s] ?? s)}</li>`).join('');
  const alert = (message?: string) => (message ? `<p class="payd-error" role="alert">${escapeHtml(message)}</p>` : '');
  // No CSP form-action on the pages whose form ends at the client: browsers (Chromium)
  // apply the form page's form-action to every redirect that follows the post, so a list
  // of this page's origin and the redirect URI's let the browser reach the client's
  // callback but not wherever the callback redirects next (another origin of the client,
  // or, with social login, the relying party of the payd that asked this one): the
  // sign-in stopped on the upstream's form. Keycloak and Google leave form-action out of
  // their sign-in pages too. The pages render only escaped text and run no inline script
  // (script-src 'self'), which is what stops an injected form in the first place.
  const endsAtClient = 'any' as const;

  return {
    errorPage(reply, err) {
      if (err.redirectUri && err.messenger) return reply.redirect(appendQuery(err.redirectUri, { error: 'access_denied' }), 303);
      if (err.redirectUri) {
        return reply.redirect(appendQuery(err.redirectUri, {
          error: err.error, error_description: err.description, ...(err.state ? { state: err.state } : {}), iss: baseUrl,
        }), 303);
      }
      return sendPage(reply, 400, 'Sign-in request refused', `<p role="alert">${escapeHtml(err.description)}</p>`);
    },

    loginForm(request, reply, r, appName, message, status = 200, providers = []) {
      const query = new URLSearchParams(REQUEST_FIELDS.flatMap((k) => (fieldOf(r, k) ? [[k, fieldOf(r, k)!] as [string, string]] : []))).toString();
      const social = providers.length
        ? `<div class="payd-social">${providers.map((p) => `<p><a class="payd-social-button" href="/oauth/federation/${escapeHtml(encodeURIComponent(p.id))}/start?${escapeHtml(query)}">Continue with ${escapeHtml(p.name)}</a></p>`).join('')}<p class="muted">or with your email and password:</p></div>`
        : '';
      return sendPage(reply, status, `Sign in to ${appName}`, `
<div class="card-box">
${alert(message)}
${social}
<form method="post" action="/oauth/authorize/login" class="payd-form">
<input type="hidden" name="csrf" value="${csrfToken(request, reply)}">${hidden(r)}
<div class="payd-field"><label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required autofocus></div>
<div class="payd-field"><label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required></div>
<button type="submit" class="payd-pay">Sign in</button>
<button type="submit" name="cancel" value="1" class="secondary" formnovalidate>Cancel</button>
</form>
<p><a href="/oauth/authorize/forgot?${escapeHtml(query)}">Forgot password?</a></p>
<p><a href="/oauth/authorize/signup?${escapeHtml(query)}">Create an account</a></p>
</div>`, [], undefined, endsAtClient);
    },

    signupForm(request, reply, r, appName, message, status = 200) {
      return sendPage(reply, status, `Create your ${appName} account`, `
<div class="card-box">
${alert(message)}
<form method="post" action="/oauth/authorize/signup" class="payd-form">
<input type="hidden" name="csrf" value="${csrfToken(request, reply)}">${hidden(r)}
<div class="payd-field"><label for="given_name">First name</label><input id="given_name" name="given_name" autocomplete="given-name" maxlength="100"></div>
<div class="payd-field"><label for="family_name">Last name</label><input id="family_name" name="family_name" autocomplete="family-name" maxlength="100"></div>
<div class="payd-field"><label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required></div>
<div class="payd-field"><label for="password">Password (12 characters or more)</label><input id="password" name="password" type="password" autocomplete="new-password" minlength="12" required></div>
<button type="submit" class="payd-pay">Create account</button>
</form></div>`, [], undefined, endsAtClient);
    },

    logoutConfirm(request, reply, fields) {
      const kept = Object.entries(fields).map(([k, v]) => (v ? `<input type="hidden" name="${escapeHtml(k)}" value="${escapeHtml(v)}">` : '')).join('');
      let target: string[] = [];
      try {
        target = fields.post_logout_redirect_uri ? [new URL(fields.post_logout_redirect_uri).origin] : [];
      } catch { /* not a URL: it will not be redirected to */ }
      return sendPage(reply, 200, 'Sign out?', `
<div class="card-box">
<p>Do you want to sign out of payd?</p>
<form method="post" action="/oauth/logout" class="payd-form">
<input type="hidden" name="csrf" value="${csrfToken(request, reply)}">${kept}
<button type="submit" name="confirm" value="1" class="payd-pay">Sign out</button>
</form></div>`, [], undefined, target);
    },

    consentForm(request, reply, r, appName, email, scopes, how, session) {
      return sendPage(reply, 200, `Allow ${appName} to use your account?`, `
<div class="card-box">
<p>You are signed in as <strong>${escapeHtml(email)}</strong>. <strong>${escapeHtml(appName)}</strong> asks to:</p>
<ul id="consent-scopes">${words(scopes)}</ul>
<form method="post" action="/oauth/authorize/consent" class="payd-form">
<input type="hidden" name="csrf" value="${csrfToken(request, reply)}">${hidden(r)}
<input type="hidden" name="how" value="${how}"><input type="hidden" name="how_mac" value="${howMac(how, session)}">
<button type="submit" name="decision" value="allow" class="payd-pay">Allow</button>
<button type="submit" name="decision" value="deny" class="secondary">Deny</button>
</form>
<p class="muted">You can withdraw this at any time on <a href="/oauth/account/applications">your applications</a> page.</p>
</div>`, [], undefined, endsAtClient);
    },

    consentHow(body, session) {
      const how = body.how;
      const known = how === 'password' || how === 'signup' || how === 'sso' || how === 'social';
      return known && body.how_mac && safeEqual(howMac(how, session), body.how_mac) ? how : 'sso';
    },

    accountApps(request, reply, email, grants, message) {
      const csrf = csrfToken(request, reply);
      const items = grants.map((g) => `<li><strong>${escapeHtml(g.name)}</strong> <span class="muted">since ${escapeHtml(g.updated_at.toISOString().slice(0, 10))}</span>
<ul>${words(g.scopes)}</ul>
<form method="post" action="/oauth/account/applications/revoke" class="payd-form">
<input type="hidden" name="csrf" value="${csrf}"><input type="hidden" name="client_id" value="${escapeHtml(g.client_id)}">
<button type="submit" class="secondary">Revoke access of ${escapeHtml(g.name)}</button>
</form></li>`).join('');
      return sendPage(reply, 200, 'Your applications', `
<div class="card-box">
${message ? `<p role="status">${escapeHtml(message)}</p>` : ''}
<p>Signed in as <strong>${escapeHtml(email)}</strong>. Applications you allowed to use your account:</p>
<ul id="granted-apps">${items || '<li>None.</li>'}</ul>
</div>`);
    },

    accountLogin(request, reply, message, status = 200) {
      return sendPage(reply, status, 'Sign in to see your applications', `
<div class="card-box">
${alert(message)}
<form method="post" action="/oauth/account/login" class="payd-form">
<input type="hidden" name="csrf" value="${csrfToken(request, reply)}">
<div class="payd-field"><label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required autofocus></div>
<div class="payd-field"><label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required></div>
<button type="submit" class="payd-pay">Sign in</button>
</form></div>`);
    },

    formFields(request, reply, r) {
      return `<input type="hidden" name="csrf" value="${csrfToken(request, reply)}">${r ? hidden(r) : ''}`;
    },

    csrfOk(request, body) {
      const nonce = cookies(request)[CSRF_COOKIE];
      return Boolean(nonce && body.csrf && safeEqual(csrfFor(nonce), body.csrf));
    },

    // The session cookie goes to /oauth (authorize, logout) and /identity (the SDK's
    // sso/data and logout), never to the payment API or the checkout.
    setSession(reply, value) {
      for (const path of SESSION_PATHS) reply.header('set-cookie', `${SESSION_COOKIE}=${value}; HttpOnly; ${sessionSameSite}; Path=${path}${secure}`);
    },

    clearSession(reply) {
      for (const path of SESSION_PATHS) reply.header('set-cookie', `${SESSION_COOKIE}=; HttpOnly; ${sessionSameSite}; Path=${path}; Max-Age=0${secure}`);
    },
  };
}
