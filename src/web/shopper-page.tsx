// The page a shopper reads (checkout's hosted and outcome pages, the payment-link page,
// a partner's 3-D Secure page): the one document in the shopper's language (language.ts),
// payd's checkout stylesheet, the language switch above the heading, and the CSP those
// pages share (scripts and requests to payd itself; framed only where the page says).
import type { FastifyReply } from 'fastify';
import type { ComponentChildren, VNode } from 'preact';
import { type Locale, type MessageKey, languages, t } from './i18n.ts';
import { LANG_PARAM, type PageLanguage } from './language.ts';
import { Document, type DocumentProps } from './layout.tsx';
import { csp } from './csp.ts';
import { sendHtml } from './html.tsx';

/** The stylesheet of shopper pages (served by the checkout). */
export const SHOPPER_CSS = '/checkout/checkout.css';

/**
 * The switch: a labelled list of links, one per language (named in itself, marked with
 * its lang), to this very address with ?lang= (its other parameters kept).
 */
export function LanguageSwitch({ url, current }: { url: string; current: Locale }): VNode {
  const here = new URL(url, 'http://payd.invalid');
  return (
    <nav class="payd-lang" aria-label={t(current, 'language')} data-payd-t-label="language">
      <ul>{languages().map(({ tag, name }) => {
        here.searchParams.set(LANG_PARAM, tag);
        return <li><a href={`${here.pathname}${here.search}`} hreflang={tag} lang={tag} aria-current={tag === current ? 'true' : undefined}>{name}</a></li>;
      })}</ul>
    </nav>
  );
}

/** A message as nodes: its text, its {placeholders} filled with the nodes given (text or elements, escaped by the renderer). */
export function tParts(locale: Locale, key: MessageKey, parts: Record<string, ComponentChildren>): ComponentChildren[] {
  const names = Object.keys(parts);
  // Each placeholder marked by its index between two private-use characters, then the message cut at the marks.
  const marks = Object.fromEntries(names.map((name, i) => [name, `\uE000${i}\uE001`]));
  return t(locale, key, marks).split(/\uE000(\d+)\uE001/).map((piece, i) => (i % 2 ? parts[names[Number(piece)]!] : piece));
}

export interface ShopperPageProps {
  lang: PageLanguage;
  title: string;
  /** The message key of the title, for a page whose script may say it again in another language (the hosted page). */
  titleKey?: MessageKey;
  refreshTo?: string | undefined;
  /** Scripts at the end of the body, with their data- attributes. */
  bodyScripts?: DocumentProps['bodyScripts'];
  children?: ComponentChildren;
}

export function ShopperPage(p: ShopperPageProps): VNode {
  return (
    <Document lang={p.lang.locale} title={p.title} stylesheets={[SHOPPER_CSS]} refreshTo={p.refreshTo} bodyScripts={p.bodyScripts ?? []}>
      {/* Named by its heading: framed in a merchant's page (3-D Secure), it stays a landmark of its own beside the page's main. */}
      <main aria-labelledby="payd-title">
        <LanguageSwitch url={p.lang.url} current={p.lang.locale} />
        <h1 data-payd-t={p.titleKey} id="payd-title">{p.title}</h1>
        {p.children}
      </main>
    </Document>
  );
}

export interface ShopperFraming {
  /** Who may frame the page (CSP frame-ancestors); default 'none', with X-Frame-Options DENY. */
  frameAncestors?: string | undefined;
  /** What the page may frame (CSP frame-src); default nothing. */
  frameSrc?: string;
}

/** Sends a shopper page (no-store): its CSP lets payd's scripts call payd; framed only as said. */
export function sendShopperPage(reply: FastifyReply, status: number, page: VNode, framing: ShopperFraming = {}): FastifyReply {
  const frameAncestors = framing.frameAncestors || undefined;
  return sendHtml(reply, status, page, {
    csp: csp({ connect: true, ...(frameAncestors ? { frameAncestors } : {}), ...(framing.frameSrc ? { frameSrc: framing.frameSrc } : {}) }),
    frameable: frameAncestors !== undefined,
  });
}

/** The common shopper page: a title and a few lines. */
export function sendShopperMessage(reply: FastifyReply, lang: PageLanguage, status: number, title: string, body: ComponentChildren, framing: ShopperFraming = {}): FastifyReply {
  return sendShopperPage(reply, status, <ShopperPage lang={lang} title={title}>{body}</ShopperPage>, framing);
}
