// Example: a merchant's web shop paying through payd's widget. The shop's server creates
// a client session with its API key (never sent to the browser), the page mounts
// widget.js with the session's widget.data, and the shopper's return is verified against
// payd's signing keys (GET /v2/signing-jwks) before the shop believes it.
// Run it: examples/checkout-shop/server.ts. The browser tests (test/e2e) use it as is.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRemoteJWKSet, jwtVerify } from 'jose';

export interface ShopOptions {
  /** payd's base URL, e.g. http://127.0.0.1:3000. */
  payd: string;
  /** The merchant's API key (payd_sk_...), exchanged for a token by the shop's server. */
  apiKey: string;
  /** The merchant's entity id: the audience of service-redirection-data. */
  entityId?: string;
  /** Called with every session credential handed to a page (tests check none leaks into a URL). */
  onSession?: (widgetData: string) => void;
}

export interface Shop {
  start(port?: number): Promise<string>;
  close(): Promise<void>;
}

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

export function createShop({ payd, apiKey, entityId, onSession }: ShopOptions): Shop {
  const jwks = createRemoteJWKSet(new URL(`${payd}/v2/signing-jwks`), { headers: { 'x-api-key': apiKey } });
  let token: { value: string; until: number } | undefined;
  let base = '';

  /** A bearer token for the payment API, renewed a minute before it expires. */
  async function bearer(): Promise<string> {
    if (token && token.until > Date.now() + 60_000) return token.value;
    const res = await fetch(`${payd}/oauth/token`, {
      method: 'POST',
      headers: { 'x-api-key': apiKey, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials',
    });
    if (!res.ok) throw new Error(`payd refused the API key (${res.status})`);
    const body = (await res.json()) as { access_token: string; expires_in: number };
    token = { value: body.access_token, until: Date.now() + body.expires_in * 1000 };
    return token.value;
  }

  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', base);
    const html = (status: number, body: string) => {
      res.writeHead(status, { 'content-type': 'text/html; charset=utf-8' });
      res.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Shop</title></head><body><main>${body}</main></body></html>`);
    };
    try {
      if (url.pathname === '/' || url.pathname === '/checkout') {
        const amount = Number(url.searchParams.get('amount') ?? 2500);
        const created = await fetch(`${payd}/v2/client-sessions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${await bearer()}`, 'content-type': 'application/json' },
          body: JSON.stringify({ amount, currency: 'EUR', shopper_redirection_url: `${base}/return`, order: { reference: 'e2e' } }),
        });
        if (!created.ok) return html(502, `<p>payd refused the session: ${escape(await created.text())}</p>`);
        const s = (await created.json()) as { widget: { data: string; js_url: string } };
        onSession?.(s.widget.data);
        // The credential goes in the page itself, never in a URL.
        return html(200, `<h1>Checkout</h1><div id="pay"></div><script src="${escape(s.widget.js_url)}"></script>
<script>PaydCheckout.mount('#pay', { data: ${JSON.stringify(s.widget.data)} });</script>`);
      }
      if (url.pathname === '/return') {
        try {
          const { payload } = await jwtVerify(url.searchParams.get('service-redirection-data') ?? '', jwks, {
            issuer: payd, ...(entityId ? { audience: entityId } : {}),
          });
          return html(200, `<h1 id="result">verified ${escape(String(payload.authorization_status))} ${escape(String(payload.client_session_status))}</h1>`);
        } catch (err) {
          return html(400, `<h1 id="result">not verified: ${escape((err as Error).message)}</h1>`);
        }
      }
      res.writeHead(404).end();
    } catch (err) {
      html(502, `<p>${escape((err as Error).message)}</p>`);
    }
  });

  return {
    async start(port = 0) {
      await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
      base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      return base;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
