// The identity provider's pages on the web layer (src/web): the web layer's Document with
// the checkout's look (/checkout/checkout.css: a heading, a card, labelled fields, visible
// focus), text escaped by the renderer, the strict CSP of csp() (no inline script or style;
// scripts only payd's own). Shared by the sign-in, consent, account, second-factor and
// social login pages, and the identity SDK's hosted pages.
import type { FastifyReply } from 'fastify';
import type { ComponentChildren, VNode } from 'preact';
import { Document, csp, sendHtml } from '../../web/index.ts';
import type { AuthRequest } from '../idp/idp.service.ts';

const STYLESHEET = '/checkout/checkout.css';

export interface IdpPageOptions {
  /** payd's scripts the page loads (deferred). */
  scripts?: string[];
  /** CSP form-action: origins besides 'self' a form may end on; 'any' leaves it out (see ENDS_AT_CLIENT). */
  formAction?: string[] | 'any';
}

/**
 * No CSP form-action on the pages whose form ends at the client: browsers (Chromium)
 * apply the form page's form-action to every redirect that follows the post, so a list
 * of this page's origin and the redirect URI's let the browser reach the client's
 * callback but not wherever the callback redirects next (another origin of the client,
 * or, with social login, the relying party of the payd that asked this one): the
 * sign-in stopped on the upstream's form. Keycloak and Google leave form-action out of
 * their sign-in pages too. The pages render only escaped text and run no inline script
 * (script-src 'self'), which is what stops an injected form in the first place.
 */
export const ENDS_AT_CLIENT = 'any' as const;

/** Sends a page of the identity provider: its title as <title> and heading, then the body. */
export function sendIdpPage(reply: FastifyReply, status: number, title: string, body: ComponentChildren, o: IdpPageOptions = {}): FastifyReply {
  return sendHtml(reply, status, (
    <Document title={title} stylesheets={[STYLESHEET]} scripts={o.scripts ?? []}>
      <main>
        <h1>{title}</h1>
        {body}
      </main>
    </Document>
  ), { csp: csp({ formAction: o.formAction ?? [] }) });
}

/** A form's message, read out by screen readers. */
export const Alert = ({ message }: { message?: string | undefined }): VNode | null => (message ? <p class="payd-error" role="alert">{message}</p> : null);

/** A form refused for its CSRF token (403). */
export const formRefused = (reply: FastifyReply, what: string): FastifyReply =>
  sendIdpPage(reply, 403, `${what} refused`, <p role="alert">The form expired or did not come from this site. Go back and try again.</p>);

/** A request refused, with why (400), and what to do (`then`). */
export const refusedPage = (reply: FastifyReply, title: string, why: string, status = 400, then?: string): FastifyReply =>
  sendIdpPage(reply, status, title, <><p role="alert">{why}</p>{then ? <p>{then}</p> : null}</>);

/** The fields of the authorization request that the forms carry back (each post is validated again). */
export const REQUEST_FIELDS = ['client_id', 'redirect_uri', 'response_type', 'scope', 'state', 'nonce', 'code_challenge', 'code_challenge_method', 'account_linking_token', 'prompt'] as const;

/** A field of the authorization request as the forms carry it (prompt: its values, space-separated). */
export const fieldOf = (r: AuthRequest, k: (typeof REQUEST_FIELDS)[number]): string | undefined => {
  const v = r[k];
  return Array.isArray(v) ? (v.length ? v.join(' ') : undefined) : v;
};

/** The authorization request as a query string (the sign-in page's links). */
export const requestQuery = (r: AuthRequest): string =>
  new URLSearchParams(REQUEST_FIELDS.flatMap((k) => (fieldOf(r, k) ? [[k, fieldOf(r, k)!] as [string, string]] : []))).toString();

/** The authorization request's hidden fields. */
export const RequestFields = ({ r }: { r: AuthRequest }): VNode => (
  <>{REQUEST_FIELDS.map((k) => (fieldOf(r, k) ? <input type="hidden" name={k} value={fieldOf(r, k)} /> : null))}</>
);

/** Hidden fields of any names (the logout confirmation carries what it was asked with). */
export const HiddenFields = ({ fields }: { fields: Record<string, string | undefined> }): VNode => (
  <>{Object.entries(fields).map(([k, v]) => (v ? <input type="hidden" name={k} value={v} /> : null))}</>
);

/** Email and password of a sign-in form. */
export const Credentials = (): VNode => (
  <>
    <div class="payd-field"><label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required autofocus /></div>
    <div class="payd-field"><label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required /></div>
  </>
);
