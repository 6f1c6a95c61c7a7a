// The old page helpers, kept only for the identity and dashboard pages that still use
// them while they move onto src/web (issue 41); the checkout's, the payment link's and
// the 3-D Secure pages no longer do (src/web/shopper-page.tsx). One layout, escaped text,
// the checkout's stylesheet, and a strict CSP (scripts and styles only from payd itself).
import type { FastifyReply } from 'fastify';

export const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

export const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

const cspWith = (formOrigins: string[] | 'any') =>
  formOrigins === 'any' ? PAGE_CSP.replace("form-action 'self'; ", '')
    : formOrigins.length ? PAGE_CSP.replace("form-action 'self'", `form-action 'self' ${[...new Set(formOrigins)].join(' ')}`)
      : PAGE_CSP;

/**
 * formOrigins: origins a form of the page may end on after redirects (CSP form-action
 * covers the redirects of a form submission), e.g. an OAuth client's redirect URI; 'any'
 * leaves form-action out, for a page whose form ends on redirects payd cannot list.
 */
export interface PageFraming {
  /** Who may frame the page (CSP frame-ancestors); default 'none' (with X-Frame-Options DENY). */
  frameAncestors?: string;
  /** What the page may frame (CSP frame-src); default nothing (default-src 'none'). */
  frameSrc?: string;
  /** A language switch (HTML), above the heading. */
  languageSwitch?: string;
  /** The message key of the title, for a page whose script may say it again in another language. */
  titleKey?: string;
}

export function sendPage(reply: FastifyReply, status: number, title: string, body: string, scripts: string[] = [], refreshTo?: string, formOrigins: string[] | 'any' = [], lang = 'en', framing: PageFraming = {}): FastifyReply {
  const html = `<!doctype html>
<html lang="${escapeHtml(lang)}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
${refreshTo ? `<meta http-equiv="refresh" content="0;url=${escapeHtml(refreshTo)}">` : ''}
<title>${escapeHtml(title)}</title>
<link rel="stylesheet" href="/checkout/checkout.css">
</head>
<body>
<main>
${framing.languageSwitch ?? ''}
<h1${framing.titleKey ? ` data-payd-t="${escapeHtml(framing.titleKey)}"` : ''}>${escapeHtml(title)}</h1>
${body}
</main>
${scripts.join('\n')}
</body>
</html>`;
  let csp = cspWith(formOrigins);
  if (framing.frameAncestors) csp = csp.replace("frame-ancestors 'none'", `frame-ancestors ${framing.frameAncestors}`);
  if (framing.frameSrc) csp += `; frame-src ${framing.frameSrc}`;
  reply
    .code(status)
    .header('content-type', 'text/html; charset=utf-8')
    .header('content-security-policy', csp)
    .header('cache-control', 'no-store')
    .header('referrer-policy', 'no-referrer');
  if (!framing.frameAncestors) reply.header('x-frame-options', 'DENY');
  return reply.send(html);
}
