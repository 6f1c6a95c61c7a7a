// Server-rendered pages of the checkout (hosted page, payment-link page, 3-D Secure
// page, outcomes): one layout, escaped text, one stylesheet, and a strict CSP (no
// inline script or style; scripts and styles only from payd itself).
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

/** The widget's own look, scoped to its elements (merchant pages load it from payd). */
export const WIDGET_CSS = `
.payd-form { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1b1f24; max-width: 28rem; }
.payd-form .payd-field { margin: 0 0 .9rem; display: flex; flex-direction: column; }
.payd-form .payd-field label, .payd-form legend { font-weight: 600; margin-bottom: .3rem; }
.payd-form .payd-field input { font-size: 1rem; padding: .65rem .7rem; border: 1px solid #8a94a3; border-radius: 8px; }
.payd-form input:focus-visible, .payd-form button:focus-visible, .payd-form a:focus-visible { outline: 3px solid #1a5fd6; outline-offset: 2px; }
.payd-form input[aria-invalid="true"] { border-color: #b3261e; }
.payd-form .payd-error { color: #b3261e; margin: .25rem 0 0; min-height: 1em; font-size: .9rem; }
.payd-form fieldset { border: 0; padding: 0; margin: 0 0 1rem; }
.payd-form .payd-choice { display: flex; gap: .5rem; align-items: center; margin: .35rem 0; }
.payd-form .payd-amount { font-size: 1.1rem; font-weight: 600; }
.payd-form .payd-row { display: grid; grid-template-columns: 1fr 1fr; gap: 0 .75rem; align-items: end; }
.payd-form .payd-row .payd-field { min-width: 0; }
.payd-form .payd-brand { margin: .25rem 0 0; font-size: .9rem; color: #4a5361; min-height: 1em; }
.payd-form .payd-merchant { font-weight: 600; margin: 0 0 .2rem; }
.payd-form .payd-order { color: #4a5361; margin: 0 0 .4rem; }
.payd-form .payd-items { margin: 0 0 .6rem; padding-left: 1.2rem; color: #4a5361; }
.payd-form .payd-pay { font-size: 1.05rem; padding: .8rem 1rem; width: 100%; border: 0; border-radius: 8px; background: #1a5fd6; color: #fff; cursor: pointer; }
.payd-form .payd-pay:disabled { background: #4a5361; color: #fff; cursor: progress; }
.payd-form .payd-disabled { pointer-events: none; color: #4a5361; }
.payd-form [hidden] { display: none !important; }
`;

/** payd's own pages (hosted page, link page, 3-D Secure page, outcomes). */
export const CHECKOUT_CSS = `
:root { color-scheme: light; font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
body { margin: 0; background: #f5f6f8; color: #1b1f24; }
main { max-width: 28rem; margin: 0 auto; padding: 1.5rem 1rem; }
h1 { font-size: 1.4rem; margin: 0 0 1rem; }
.card-box { background: #fff; border-radius: 12px; padding: 1.25rem; box-shadow: 0 1px 3px rgb(0 0 0 / 12%); }
button { font-size: 1.05rem; padding: .8rem 1rem; width: 100%; border: 0; border-radius: 8px; background: #1a5fd6; color: #fff; cursor: pointer; }
button.secondary { background: #e4e7ec; color: #1b1f24; margin-top: .6rem; }
button:focus-visible, a:focus-visible { outline: 3px solid #1a5fd6; outline-offset: 2px; }
.muted { color: #4a5361; font-size: .9rem; }
form.inline { display: inline; }
button.link { background: none; border: 0; padding: 0; width: auto; font: inherit; color: inherit; text-decoration: underline; cursor: pointer; }
textarea, select { font: inherit; padding: .5rem; border: 1px solid #8a94a3; border-radius: 8px; }
.payd-receipt { display: grid; grid-template-columns: max-content 1fr; gap: .3rem 1rem; margin: 0 0 .5rem; }
.payd-receipt dt { color: #4a5361; } .payd-receipt dd { margin: 0; overflow-wrap: anywhere; }
h2 { font-size: 1.1rem; margin: 0 0 .6rem; }
table { border-collapse: collapse; width: 100%; } th, td { text-align: left; padding: .3rem; border-bottom: 1px solid #d5d9e0; vertical-align: top; }
td { overflow-wrap: anywhere; }
.table-scroll { max-width: 100%; overflow-x: auto; }
.table-scroll table { min-width: 40rem; }
main:has(.table-scroll) { max-width: 72rem; }
nav { overflow-wrap: anywhere; }
${WIDGET_CSS}`;

const cspWith = (formOrigins: string[] | 'any') =>
  formOrigins === 'any' ? PAGE_CSP.replace("form-action 'self'; ", '')
    : formOrigins.length ? PAGE_CSP.replace("form-action 'self'", `form-action 'self' ${[...new Set(formOrigins)].join(' ')}`)
      : PAGE_CSP;

/**
 * formOrigins: origins a form of the page may end on after redirects (CSP form-action
 * covers the redirects of a form submission), e.g. an OAuth client's redirect URI; 'any'
 * leaves form-action out, for a page whose form ends on redirects payd cannot list.
 */
export function sendPage(reply: FastifyReply, status: number, title: string, body: string, scripts: string[] = [], refreshTo?: string, formOrigins: string[] | 'any' = [], lang = 'en'): FastifyReply {
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
<h1>${escapeHtml(title)}</h1>
${body}
</main>
${scripts.join('\n')}
</body>
</html>`;
  return reply
    .code(status)
    .header('content-type', 'text/html; charset=utf-8')
    .header('content-security-policy', cspWith(formOrigins))
    .header('cache-control', 'no-store')
    .header('referrer-policy', 'no-referrer')
    .header('x-frame-options', 'DENY')
    .send(html);
}

/**
 * The hosted page: the widget takes the session credential from the page address's
 * fragment (#session=...), never sent to any server.
 */
export function fragmentCheckoutPage(reply: FastifyReply, title: string, intro: string, lang = 'en'): FastifyReply {
  const body = `<p class="muted">${escapeHtml(intro)}</p>
<div class="card-box" id="payd-checkout"></div>`;
  const script = '<script src="/checkout/widget.js" data-payd-session-from="fragment" data-payd-mount="#payd-checkout"></script>';
  return sendPage(reply, 200, title, body, [script], undefined, [], lang);
}

/** A page that mounts the widget for a session credential written in the page (payment link page). */
export function checkoutPage(reply: FastifyReply, title: string, intro: string, widgetData: string, lang = 'en'): FastifyReply {
  const body = `<p class="muted">${escapeHtml(intro)}</p>
<div class="card-box" id="payd-checkout"></div>`;
  const script = `<script src="/checkout/widget.js" data-payd-session="${escapeHtml(widgetData)}" data-payd-mount="#payd-checkout"></script>`;
  return sendPage(reply, 200, title, body, [script], undefined, [], lang);
}
