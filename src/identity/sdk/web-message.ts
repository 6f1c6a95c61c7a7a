// response_mode=web_message (the SDK's silent authentication, checkSession): instead of
// a redirect, /oauth/authorize answers a page, loaded in a hidden iframe of the relying
// party, that posts {type: 'authorization_response', response: {code, state} | {error,
// error_description}} to its parent, to the origin of the validated redirect_uri only
// (never '*'). The page runs one static script (no inline script: the CSP is
// script-src 'self'), reads the message from an inert JSON element, and may be framed
// by that origin alone (frame-ancestors).
import type { FastifyInstance, FastifyReply } from 'fastify';
import { sendHtml } from '../../web/index.ts';
import { WebMessagePage } from './web-message-page.tsx';

export const WEB_MESSAGE_SCRIPT = '/identity/v1/web-message.js';

const SCRIPT = `(function () {
  var data = JSON.parse(document.getElementById('payd-web-message').textContent);
  for (var i = 0; i < data.origins.length; i++) window.parent.postMessage(data.message, data.origins[i]);
})();
`;

/**
 * The page posting the answer to its parent, to each of the target origins (the browser
 * delivers it only if the parent is of that origin): the validated redirect URI's origin,
 * or, for an error of a request without a usable redirect_uri, the application's
 * registered origins (so that its silent authentication rejects instead of waiting).
 */
export function webMessageReply(reply: FastifyReply, targetOrigins: string | readonly string[], response: Record<string, string>): FastifyReply {
  const origins = typeof targetOrigins === 'string' ? [targetOrigins] : [...new Set(targetOrigins)];
  const targetOrigin = origins.join(' ');
  const data = { origins, message: { type: 'authorization_response', response } };
  // Narrower than the web layer's csp(): the page has its script and nothing else (no
  // style, no image), posts no form, and is framed by the target origins only.
  return sendHtml(reply, 200, WebMessagePage({ data, script: WEB_MESSAGE_SCRIPT }), {
    csp: `default-src 'none'; script-src 'self'; frame-ancestors ${targetOrigin}; base-uri 'none'; form-action 'none'`, frameable: true,
  });
}

export async function webMessageRoutes(app: FastifyInstance): Promise<void> {
  app.get(WEB_MESSAGE_SCRIPT, { schema: { hide: true } }, async (_request, reply) =>
    reply.header('content-type', 'text/javascript; charset=utf-8').header('cache-control', 'public, max-age=3600').send(SCRIPT));
}
