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
  /** A <meta http-equiv="refresh"> to this address. */
  refreshTo?: string | undefined;
  children?: ComponentChildren;
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
        {(p.scripts ?? []).map((src) => <script src={src} defer />)}
      </head>
      <body>
        {p.children}
        {(p.bodyScripts ?? []).map((s) => <script src={s.src} {...Object.fromEntries(Object.entries(s.data ?? {}).map(([k, v]) => [`data-${k}`, v]))} />)}
      </body>
    </html>
  );
}
