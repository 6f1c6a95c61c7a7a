// The dashboard's webhook pages and a payment link's attempts (issue 21), through the real
// app with its dispatcher running and a real receiver: an admin sets the endpoint (its
// secret shown once), reads the delivery log, an event's request and each attempt's
// answer, replays once per form; a payment's timeline lists its webhooks; operators,
// viewers and other entities get nothing of it.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Merchant, TestApp } from '../helpers/app.ts';
import { createUser, hiddenFields } from '../identity/idp-helpers.ts';
import { FAST, type Receiver, startReceiver, waitFor } from '../webhooks/helpers.ts';
import { addMembers, createDashboardApp, dashboardClient, formOf } from '../helpers/dashboard.ts';

const card = (number: string) => ({ type: 'CARD', number, expiry_month: '12', expiry_year: '2031', cvv: '123' });

describe('dashboard: webhooks and link attempts', () => {
  let t: TestApp;
  let a: Merchant;
  let b: Merchant;
  let rx: Receiver;
  const { signInAs, get, post } = dashboardClient(() => t);

  before(async () => {
    t = await createDashboardApp(FAST);
    // The receiver fails the first request it gets, then accepts.
    rx = await startReceiver((_req, n) => (n === 0 ? { status: 500, body: 'receiver down' } : { status: 200, body: 'thanks' }));
    t.app.webhooks.dispatcher.start((err) => console.error(err));
    a = await t.createMerchant('Hook shop A');
    b = await t.createMerchant('Hook shop B');
    for (const email of ['ada@hooks.example', 'olga@hooks.example', 'bea@hooks.example']) await createUser(t, email);
    await addMembers(t, [[a, 'ada@hooks.example', 'admin'], [a, 'olga@hooks.example', 'operator'], [b, 'bea@hooks.example', 'admin']]);
  });
  after(async () => {
    await t?.close();
    await rx?.close();
  });

  const pay = async (m: Merchant, reference: string) => {
    const res = await t.app.inject({
      method: 'POST', url: '/v2/payments', headers: m.auth,
      payload: { amount: 5000, currency: 'EUR', capture_mode: 'MANUAL', order: { reference }, split: [{ partner: 'card-sim', method: 'CARD', amount: 5000, instrument: card('4242424242424242') }] },
    });
    assert.equal(res.statusCode, 200, res.body);
    return res.json() as { id: string };
  };
  const eventsOf = async (paymentId: string) => (await t.testDb.db.query<{ id: string; type: string }>(
    'SELECT id, type FROM webhook_events WHERE subject_id = $1 ORDER BY created_at', [paymentId])).rows;
  const deliveries = async (eventId: string) => (await t.testDb.db.query<{ reason: string; status: string }>(
    'SELECT reason, status FROM webhook_deliveries WHERE event_id = $1 ORDER BY created_at', [eventId])).rows;

  let paymentId = '';
  let eventId = '';

  it('an admin sets the endpoint (its secret shown once); a payment\'s events reach it and its timeline lists them', async () => {
    const ada = await signInAs('ada@hooks.example');
    const list = await get(ada, `/dashboard/${a.entityId}/webhooks`);
    assert.equal(list.statusCode, 200, list.body);
    assert.match(list.body, /No endpoint: events are kept/);
    assert.match(list.body, /aria-current="page"[^>]*>Webhooks</);
    // (The page adds endpoints, each with its own secret: the form takes the URL and the event types.)
    const bad = await post(ada, `/dashboard/${a.entityId}/webhooks/endpoints`, { ...formOf(list.body, /\/webhooks\/endpoints/), url: 'ftp://example.com/hook', events: '*' });
    assert.equal(bad.statusCode, 400);
    assert.match(bad.body, /The endpoint was not saved: url [^<]+/);
    const set = await post(ada, `/dashboard/${a.entityId}/webhooks/endpoints`, { ...formOf(list.body, /\/webhooks\/endpoints/), url: `${rx.url}/hooks`, events: '*' });
    assert.equal(set.statusCode, 201, set.body);
    assert.match(set.body, /signing secret, shown this once/);
    assert.match(set.body, /id="new-secret" readonly value="whsec_[^"]+"/);
    assert.doesNotMatch((await get(ada, `/dashboard/${a.entityId}/webhooks`)).body, /whsec_/, 'never shown again');

    const p = await pay(a, 'HOOK-1');
    paymentId = p.id;
    const captured = await t.app.inject({ method: 'POST', url: `/v2/payments/${p.id}/captures`, headers: a.auth, payload: { amount: 5000 } });
    assert.equal(captured.statusCode, 200, captured.body);
    const events = await eventsOf(p.id);
    assert.ok(events.length >= 2, `events of the payment: ${JSON.stringify(events)}`);
    eventId = events[0]!.id;
    // Every event ends delivered (the first request got a 500 and was retried).
    await waitFor(async () => (await Promise.all(events.map((ev) => deliveries(ev.id)))).every((ds) => ds.every((d) => d.status === 'DELIVERED')), 20_000, 'the deliveries');

    const detail = await get(ada, `/dashboard/${a.entityId}/payments/${p.id}`);
    for (const ev of events) {
      assert.match(detail.body, new RegExp(`<a href="/dashboard/${a.entityId}/webhooks/${ev.id}">Webhook ${ev.type.replace('.', '\\.')}: delivered`));
    }
    const log = await get(ada, `/dashboard/${a.entityId}/webhooks?status=DELIVERED`);
    for (const ev of events) assert.match(log.body, new RegExp(`/webhooks/${ev.id}">${ev.type.replace('.', '\\.')}</a>`));
  });

  it("an event's page shows the request and each attempt's answer; Replay posted twice sends it once more, once", async () => {
    const ada = await signInAs('ada@hooks.example');
    // The receiver's first answer (500) went to whichever event came first: find it.
    const failedAttempt = (await t.testDb.db.query<{ event_id: string }>(
      `SELECT d.event_id FROM webhook_attempts at JOIN webhook_deliveries d ON d.id = at.delivery_id WHERE at.status_code = 500 LIMIT 1`)).rows[0]!;
    const page = await get(ada, `/dashboard/${a.entityId}/webhooks/${failedAttempt.event_id}`);
    assert.equal(page.statusCode, 200, page.body);
    assert.match(page.body, /<td>500<\/td>/);
    assert.match(page.body, /receiver down/);
    assert.match(page.body, /<td>200<\/td>/);
    assert.match(page.body, /thanks/);
    assert.match(page.body, new RegExp(`&quot;id&quot;: &quot;${failedAttempt.event_id}&quot;`), 'the request body as sent (the envelope)');

    const event = await get(ada, `/dashboard/${a.entityId}/webhooks/${eventId}`);
    assert.match(event.body, new RegExp(paymentId), 'the payload names the payment');
    const form = formOf(event.body, /\/replay/);
    const sentBefore = rx.requests.filter((r) => JSON.parse(r.body).id === eventId).length;
    const [first, second] = await Promise.all([
      post(ada, `/dashboard/${a.entityId}/webhooks/${eventId}/replay`, form),
      post(ada, `/dashboard/${a.entityId}/webhooks/${eventId}/replay`, form),
    ]);
    assert.equal(first.statusCode, 303, first.body);
    assert.equal(second.statusCode, 303, second.body);
    assert.deepEqual([first.headers.location, second.headers.location].map((l) => String(l).split('?')[1]).sort(), ['replayed=1', 'replayed=already']);
    assert.deepEqual((await deliveries(eventId)).map((d) => d.reason), ['EVENT', 'REPLAY'], 'one replay for the form');
    await waitFor(() => rx.requests.filter((r) => JSON.parse(r.body).id === eventId).length === sentBefore + 1, 20_000, 'the replay to arrive');
    // Either post may be the one that replayed: the page of that one says so.
    const replayed = [first, second].find((r) => String(r.headers.location).endsWith('replayed=1'))!;
    const again = await get(ada, String(replayed.headers.location));
    assert.match(again.body, /Replayed: a new delivery is on its way/);
    assert.match(again.body, /Replay of /);
  });

  it('operators get 403 and no Webhooks link; another entity\'s admin gets 404 for the event and the page', async () => {
    const olga = await signInAs('olga@hooks.example');
    assert.equal((await get(olga, `/dashboard/${a.entityId}/webhooks`)).statusCode, 403);
    assert.equal((await get(olga, `/dashboard/${a.entityId}/webhooks/${eventId}`)).statusCode, 403);
    const home = await get(olga, `/dashboard/${a.entityId}/payments/${paymentId}`);
    assert.doesNotMatch(home.body, />Webhooks</);
    assert.match(home.body, /Webhook payment\.[a-z_]+: delivered/, 'the timeline says it, without the admin page link');
    assert.doesNotMatch(home.body, /href="[^"]*\/webhooks\//);
    const bea = await signInAs('bea@hooks.example');
    assert.equal((await get(bea, `/dashboard/${a.entityId}/webhooks/${eventId}`)).statusCode, 404);
    const underB = await get(bea, `/dashboard/${b.entityId}/webhooks/${eventId}`);
    assert.equal(underB.statusCode, 404);
    const csrf = hiddenFields((await get(bea, `/dashboard/${b.entityId}/webhooks`)).body).get('csrf')!;
    const replay = await post(bea, `/dashboard/${b.entityId}/webhooks/${eventId}/replay`, { csrf, form_key: crypto.randomUUID() });
    assert.equal(replay.statusCode, 404);
    assert.equal((await deliveries(eventId)).length, 2, 'nothing replayed from another entity');
  });

  it('rotating the secret shows the new one once; without an endpoint, events are kept and a replay says why it cannot', async () => {
    const ada = await signInAs('ada@hooks.example');
    // (Rotation and delete are on the endpoint's own page; delete after its confirmation.)
    const [endpoint] = (await t.testDb.db.query<{ id: string }>('SELECT id FROM webhook_endpoints WHERE entity_id = $1', [a.entityId])).rows;
    const at = `/dashboard/${a.entityId}/webhooks/endpoints/${endpoint!.id}`;
    const own = await get(ada, at);
    const rotated = await post(ada, `${at}/rotate`, formOf(own.body, /\/rotate/));
    assert.equal(rotated.statusCode, 200);
    assert.match(rotated.body, /new signing secret \(version 2\)/);
    const confirm = await get(ada, `${at}/delete`);
    const removed = await post(ada, `${at}/delete`, formOf(confirm.body, /\/delete/));
    assert.equal(removed.statusCode, 303);
    const p = await pay(a, 'HOOK-NOWHERE');
    const [ev] = await eventsOf(p.id);
    const detail = await get(ada, `/dashboard/${a.entityId}/payments/${p.id}`);
    assert.match(detail.body, /Webhook payment\.[a-z_]+: not sent \(no endpoint\)/);
    const page = await get(ada, `/dashboard/${a.entityId}/webhooks/${ev!.id}`);
    const replay = await post(ada, `/dashboard/${a.entityId}/webhooks/${ev!.id}/replay`, formOf(page.body, /\/replay/));
    assert.equal(replay.statusCode, 409);
    assert.match(replay.body, /Not replayed: The event has no destination/);
    const actions = await t.testDb.db.query('SELECT 1 FROM dashboard_actions WHERE idempotency_key = $1', [formOf(page.body, /\/replay/).form_key]);
    assert.equal(actions.rows.length, 0, 'a refused replay records nothing, so the form can be sent again once an endpoint is set');
  });

  it("a link's page lists its attempts, declined ones too, for every member", async () => {
    const created = await t.app.inject({ method: 'POST', url: '/v2/payment-links', headers: a.auth, payload: { amount: 4200, currency: 'EUR', order: { reference: 'LINK-ATTEMPTS' } } });
    assert.equal(created.statusCode, 200, created.body);
    const link = created.json() as { id: string };
    const attempt = async (number: string) => {
      const page = await t.app.inject({ url: `/pay/${link.id}` });
      const data = /data-payd-session="([^"]+)"/.exec(page.body)![1]!;
      return (await t.app.inject({
        method: 'POST', url: '/checkout/v1/session/payments', headers: { 'x-payd-session': data },
        payload: { split: [{ partner: 'card-sim', method: 'CARD', amount: 4200, instrument: card(number) }] },
      })).json() as { payment_id: string; authorization_status: string };
    };
    const declined = await attempt('4000000000000002');
    assert.equal(declined.authorization_status, 'REFUSED');
    const paid = await attempt('4242424242424242');
    assert.equal(paid.authorization_status, 'AUTHORIZED');
    const olga = await signInAs('olga@hooks.example');
    const links = await get(olga, `/dashboard/${a.entityId}/links`);
    assert.match(links.body, new RegExp(`href="/dashboard/${a.entityId}/links/${link.id}"`));
    const page = await get(olga, `/dashboard/${a.entityId}/links/${link.id}`);
    assert.equal(page.statusCode, 200, page.body);
    assert.match(page.body, /LINK-ATTEMPTS/);
    assert.match(page.body, new RegExp(`/payments/${paid.payment_id}">[^<]+</a></td><td class="num">42\\.00 EUR</td><td class="status">AUTHORIZED`));
    assert.match(page.body, new RegExp(`/payments/${declined.payment_id}">[^<]+</a></td><td class="num">42\\.00 EUR</td><td class="status">REFUSED`));
    const bea = await signInAs('bea@hooks.example');
    assert.equal((await get(bea, `/dashboard/${b.entityId}/links/${link.id}`)).statusCode, 404);
  });

  it("a link made in the dashboard with its own webhook URL: its events go there; a bad URL is refused with the reason", async () => {
    const olga = await signInAs('olga@hooks.example');
    const page = await get(olga, `/dashboard/${a.entityId}/links`);
    const form = formOf(page.body, /\/links/);
    const bad = await post(olga, `/dashboard/${a.entityId}/links`, { ...form, amount: '12.00', currency: 'EUR', days: '7', order_reference: 'LINK-HOOK', webhook_url: 'mailto:x@y.z' });
    assert.equal(bad.statusCode, 400);
    assert.match(bad.body, /Webhook URL: an http\(s\) address/);
    const created = await post(olga, `/dashboard/${a.entityId}/links`, { ...form, amount: '12.00', currency: 'EUR', days: '7', order_reference: 'LINK-HOOK', webhook_url: `${rx.url}/link-hook` });
    assert.equal(created.statusCode, 303, created.body);
    const link = (await t.testDb.db.query<{ id: string; url: string }>(`SELECT id, webhook->>'url' AS url FROM payment_links WHERE entity_id = $1 AND "order"->>'reference' = 'LINK-HOOK'`, [a.entityId])).rows;
    assert.equal(link.length, 1);
    assert.equal(link[0]!.url, `${rx.url}/link-hook`);
    const cancel = formOf((await get(olga, `/dashboard/${a.entityId}/links`)).body, new RegExp(`/links/${link[0]!.id}/cancel`));
    assert.equal((await post(olga, `/dashboard/${a.entityId}/links/${link[0]!.id}/cancel`, cancel)).statusCode, 303);
    await waitFor(() => rx.requests.some((r) => r.path === '/link-hook' && JSON.parse(r.body).type === 'payment_link.cancelled'), 20_000, 'the link\'s own webhook');
  });
});
