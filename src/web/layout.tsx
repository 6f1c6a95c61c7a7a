// The one layout of payd's server-rendered pages: the document (language, title,
// stylesheets, deferred scripts, an optional refresh); each area puts its own chrome
// (the dashboard's header and navigation, the checkout's heading) in the body.
import type { ComponentChildren, VNode } from 'preact';

export interface DocumentProps {
  lang?: string;
  /** The <title> text. */
  title: string;
  stylesheets: string[];
  /** Scripts loaded with defer from the head. */
  scripts?: string[];
  /** Scripts at the end of the body, with their data- attributes. */
  bodyScripts?: Array<{ src: string; data?: Record<string, string> }>;
  /**
   * The page's own style and script written in it (after the stylesheets; at the end of the
   * body), for a page whose CSP allows exactly them by their hashes (csp.ts cspHash): the
   * texts are written as they are, so they must be payd's own (no </style>, </script> or <!--).
   */
  inlineStyle?: string;
  inlineBodyScript?: string;
  /** A <meta http-equiv="refresh"> to this address. */
  refreshTo?: string | undefined;
  children?: ComponentChildren;
}

/** A style or script text as it is, refused if it could end its element early or change how it is parsed. */
function rawText(text: string, tag: 'style' | 'script'): string {
  if (new RegExp(`</${tag}|<!--`, 'i').test(text)) throw new Error(`an inline ${tag} holds </${tag} or <!--`);
  return text;
}

export function Document(p: DocumentProps): VNode {
  return (
    <html lang={p.lang ?? 'en'}>
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="referrer" content="no-referrer" />
        {p.refreshTo ? <meta http-equiv="refresh" content={`0;url=${p.refreshTo}`} /> : null}
        <title>{p.title}</title>
        {p.stylesheets.map((href) => <link rel="stylesheet" href={href} />)}
        {p.inlineStyle !== undefined ? <style dangerouslySetInnerHTML={{ __html: rawText(p.inlineStyle, 'style') }} /> : null}
        {(p.scripts ?? []).map((src) => <script src={src} defer />)}
      </head>
      <body>
        {p.children}
        {(p.bodyScripts ?? []).map((s) => <script src={s.src} {...Object.fromEntries(Object.entries(s.data ?? {}).map(([k, v]) => [`data-${k}`, v]))} />)}
        {p.inlineBodyScript !== undefined ? <script dangerouslySetInnerHTML={{ __html: rawText(p.inlineBodyScript, 'script') }} /> : null}
      </body>
    </html>
  );
}
