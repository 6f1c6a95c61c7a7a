// The hosted pages of the identity SDK's flows (password reset, sign-up confirmation, the
// SDK's sign-out) on the web layer's one document (src/web): the heading, then the page,
// with the hosted sign-in pages' look (checkout.css); no script.
import type { FastifyReply } from 'fastify';
import type { ComponentChildren } from 'preact';
import { type CspOptions, Document, csp, sendHtml } from '../../web/index.ts';

/** formAction: 'any' for a page whose form ends at the application after redirects payd cannot list (see login/pages.ts endsAtClient). */
export function identityPage(reply: FastifyReply, status: number, title: string, body: ComponentChildren, o: { formAction?: CspOptions['formAction'] } = {}): FastifyReply {
  return sendHtml(reply, status, (
    <Document title={title} stylesheets={['/checkout/checkout.css']}>
      <main><h1>{title}</h1>{body}</main>
    </Document>
  ), { csp: csp({ formAction: o.formAction ?? [] }) });
}

/** The page of a mailed link that was used or has expired. */
export const linkExpired = (reply: FastifyReply, what: string): FastifyReply =>
  identityPage(reply, 400, 'This link does not work any more', <p role="alert">The link has expired or was already used. {what}</p>);
