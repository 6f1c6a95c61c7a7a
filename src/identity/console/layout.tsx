// The console's pages on the web layer's one document (src/web): the heading, then (signed
// in) the navigation with the sign-out form and its CSRF token, then the page. The look is
// the hosted identity pages' (checkout.css); no script.
import type { FastifyReply } from 'fastify';
import type { ComponentChildren, VNode } from 'preact';
import { CsrfField, Document, csp, sendHtml } from '../../web/index.ts';

const STYLESHEETS = ['/checkout/checkout.css'];

export interface ConsolePage {
  title: string;
  /** The signed-in administrator. */
  email: string;
  /** The session's CSRF token: with it, the navigation has the sign-out form. */
  csrf?: string | undefined;
  /** Origins a form of the page may end on after redirects (login-as ends at the application). */
  formOrigins?: string[];
}

function Nav({ email, csrf }: { email: string; csrf?: string | undefined }): VNode {
  return (
    <nav class="muted">
      <a href="/console">Applications</a> · <a href="/console/users">Profiles</a> · <a href="/console/mail">Mail</a> · signed in as {email}
      {csrf ? (
        <>
          {' · '}
          <form method="post" action="/console/logout" class="inline"><CsrfField token={csrf} /><button type="submit" class="link">Sign out</button></form>
        </>
      ) : null}
    </nav>
  );
}

/** A page of the signed-in console. */
export function consolePage(reply: FastifyReply, status: number, p: ConsolePage, body: ComponentChildren): FastifyReply {
  return sendHtml(reply, status, (
    <Document title={p.title} stylesheets={STYLESHEETS}>
      <main>
        <h1>{p.title}</h1>
        <Nav email={p.email} csrf={p.csrf} />
        {body}
      </main>
    </Document>
  ), { csp: csp({ formAction: p.formOrigins ?? [] }) });
}

/** A page outside a console session (sign-in failures, sign-out). */
export function plainPage(reply: FastifyReply, status: number, title: string, body: ComponentChildren): FastifyReply {
  return sendHtml(reply, status, (
    <Document title={title} stylesheets={STYLESHEETS}>
      <main><h1>{title}</h1>{body}</main>
    </Document>
  ), { csp: csp() });
}

/** The refusal of a form whose CSRF token is missing or stale. */
export const expired = (): VNode => <p role="alert">The form expired; reload the page.</p>;
