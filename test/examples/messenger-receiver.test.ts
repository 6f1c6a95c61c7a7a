// The reference account_linking receiver against a real payd: signature check, 200 at
// once, one code exchange however often the platform retries (a second exchange would
// revoke the first tokens), `unlinked`.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { accountLinkingReceiver, type LinkedAccount } from '../../examples/messenger-account-linking/receiver.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { freePort } from '../helpers/processes.ts';
import { waitFor } from '../helpers/wait.ts';

const LINKING = 'https://messenger.example/account_linking';
const APP_SECRET = 'messenger-app-secret';


describe('reference messenger account_linking receiver', () => {
  let t: TestApp;
  let payd: string;
  let receiver: http.Server;
  let url: string;
  let bot: { client_id: string; client_secret: string };
  const linked: LinkedAccount[] = [];
  const unlinked: string[] = [];
  /** Codes the receiver has looked up, and how many of those it had seen already (a retried delivery it then skips). */
  const codes = new Set<string>();
  let retriesSkipped = 0;

  before(async () => {
    const port = await freePort();
    payd = `http://127.0.0.1:${port}`;
    t = await createTestApp({ baseUrl: payd });
    await t.app.listen({ port, host: '127.0.0.1' });
    const post = async (u: string, payload: object) => (await t.app.inject({ method: 'POST', url: u, headers: t.adminHeaders, payload })).json();
    await post('/admin/v1/identity/users', { email: 'ana@example.com', password: 'correct horse battery staple' });
    bot = await post('/admin/v1/identity/applications', { name: 'Bot', callback_urls: [LINKING], response_types: ['messenger_code'] });
    receiver = http.createServer(accountLinkingReceiver({
      appSecret: APP_SECRET, tokenUrl: `${payd}/oauth/token`, clientId: bot.client_id, clientSecret: bot.client_secret, accountLinkingUrl: LINKING,
      onLinked: (a) => void linked.push(a), onUnlinked: (s) => void unlinked.push(s),
      seen: { add: (k) => (codes.has(k) ? (retriesSkipped++, false) : (codes.add(k), true)) },
    }));
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/webhook`;
  });
  after(async () => {
    await new Promise((r) => receiver?.close(r));
    await t?.close();
  });

  async function messengerCode(): Promise<string> {
    const q = new URLSearchParams({ response_type: 'messenger_code', client_id: bot.client_id, redirect_uri: `${LINKING}?psid=1`, account_linking_token: 'ALT' });
    const page = await t.app.inject({ url: `/oauth/authorize?${q}` });
    const form = new URLSearchParams();
    for (const m of page.body.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"\/?>/g)) form.set(m[1]!, m[2]!.replace(/&amp;/g, '&'));
    form.set('email', 'ana@example.com');
    form.set('password', 'correct horse battery staple');
    const res = await t.app.inject({ method: 'POST', url: '/oauth/authorize/login', headers: { cookie: String(page.headers['set-cookie']).split(';')[0]!, 'content-type': 'application/x-www-form-urlencoded' }, payload: form.toString() });
    return new URL(String(res.headers.location)).searchParams.get('authorization_code')!;
  }
  const deliver = (event: object, secret = APP_SECRET) => {
    const body = JSON.stringify(event);
    return fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json', 'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}` } });
  };

  it('exchanges a linked code once, however often the event is delivered', async () => {
    const code = await messengerCode();
    const event = { object: 'page', entry: [{ id: 'p', time: 1, messaging: [{ sender: { id: 'psid-1' }, recipient: { id: 'page' }, timestamp: 1, account_linking: { status: 'linked', authorization_code: code } }] }] };
    const first = await deliver(event);
    assert.equal(first.status, 200);
    await deliver(event); // the platform retries
    await deliver(event);
    // Until the receiver has handled all three deliveries (the two retries reached its
    // check of seen codes), so that a second exchange would have happened by now.
    await waitFor(() => linked.length >= 1 && retriesSkipped + linked.length >= 3, { what: 'the three deliveries to be handled' });
    assert.equal(linked.length, 1, 'one exchange');
    assert.equal(linked[0]!.senderId, 'psid-1');
    const info = await fetch(`${payd}/userinfo`, { headers: { authorization: `Bearer ${linked[0]!.tokens.access_token}` } });
    assert.equal(info.status, 200, 'the tokens were not revoked by a second exchange');
  });

  it('refuses a bad signature and handles unlinked', async () => {
    const event = { object: 'page', entry: [{ messaging: [{ sender: { id: 'psid-2' }, account_linking: { status: 'unlinked' } }] }] };
    assert.equal((await deliver(event, 'not-the-secret')).status, 403);
    assert.equal(unlinked.length, 0);
    assert.equal((await deliver(event)).status, 200);
    await waitFor(() => unlinked.length === 1);
    assert.equal(unlinked[0], 'psid-2');
  });
});
