// The web_message page (web-message.ts): the message as inert JSON, read by the one
// static script, on the web layer's one document.
import type { VNode } from 'preact';
import { Document } from '../../web/index.ts';

/** JSON inside a <script type="application/json"> element: '<' escaped so that nothing closes it. */
const inertJson = (value: unknown) => JSON.stringify(value).replace(/</g, '\\u003c');

export function WebMessagePage({ data, script }: { data: unknown; script: string }): VNode {
  return (
    <Document title="payd" stylesheets={[]} bodyScripts={[{ src: script }]}>
      {/* the text of a script element is not HTML (entities stay as written): the JSON goes in as is, with '<' escaped */}
      <script type="application/json" id="payd-web-message" dangerouslySetInnerHTML={{ __html: inertJson(data) }} />
    </Document>
  );
}
