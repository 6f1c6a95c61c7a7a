// Rendering: Preact components rendered to a string on the server (preact-render-to-string).
// Every text child and attribute value is escaped by the renderer; the one way to put HTML
// that was built elsewhere into a page is <TrustedHtml html={...}/>, which says so where it
// is used (to be used only for HTML that payd itself built with escaping).
import type { ComponentChildren, VNode } from 'preact';
import { jsxTemplate } from 'preact/jsx-runtime';
import { renderToString } from 'preact-render-to-string';
import type { FastifyReply } from 'fastify';

export type { ComponentChildren, VNode };

/** A node rendered to HTML text (escaped). */
export const render = (node: VNode): string => renderToString(node);

/** HTML built by payd elsewhere (already escaped), as a node: a <div> (or the given tag) wrapping it. */
export function TrustedHtml({ html, tag = 'div', ...attrs }: { html: string; tag?: 'div' | 'span' | 'section'; [attr: string]: unknown }): VNode {
  const Tag = tag;
  return <Tag {...attrs} dangerouslySetInnerHTML={{ __html: html }} />;
}

/** Every markup character as an entity (Text below; the renderer leaves > and ' as they are). */
const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/**
 * Text escaped as payd's hand-built pages escaped it (& < > " ' all as entities), no element
 * around it: for text from outside payd shown as a record (a receipt's order items), where
 * the page promises every markup character is an entity. The renderer's own escaping
 * ({value}: & < ") is as safe; this is the stricter form, not a door for HTML.
 */
export const Text = ({ value }: { value: string }): VNode => jsxTemplate([escapeHtml(value)]);

export interface PageHeaders {
  /** The page's Content-Security-Policy (csp() in csp.ts). */
  csp: string;
  /** Cache-Control; pages are no-store unless they say otherwise (the card frame is cacheable). */
  cacheControl?: string;
  /** Whether other pages may frame it; when false (default), X-Frame-Options DENY too. */
  frameable?: boolean;
}

/** A whole page (a <Document>) as text, with its doctype. */
export const renderPage = (page: VNode): string => `<!doctype html>\n${render(page)}`;

/** A page rendered once (renderPage) and compressed: its bytes in one Content-Encoding ('identity': as they are). */
export interface EncodedPage { body: Buffer; encoding: 'br' | 'gzip' | 'identity' }

/** Sends a whole page (a <Document>, or one already rendered and encoded), with payd's security headers. */
export function sendHtml(reply: FastifyReply, status: number, page: VNode | string | EncodedPage, h: PageHeaders): FastifyReply {
  reply
    .code(status)
    .header('content-type', 'text/html; charset=utf-8')
    .header('content-security-policy', h.csp)
    .header('cache-control', h.cacheControl ?? 'no-store')
    .header('referrer-policy', 'no-referrer')
    .header('x-content-type-options', 'nosniff');
  if (!h.frameable) reply.header('x-frame-options', 'DENY');
  if (typeof page === 'object' && 'encoding' in page) {
    const vary = reply.getHeader('vary');
    reply.header('vary', vary ? `${String(vary)}, Accept-Encoding` : 'Accept-Encoding');
    if (page.encoding !== 'identity') reply.header('content-encoding', page.encoding);
    return reply.send(page.body);
  }
  return reply.send(typeof page === 'string' ? `<!doctype html>\n${page}` : renderPage(page));
}
