// A 3-D Secure challenge the shopper leaves (issue 45, item 4): past
// PAYD_CHALLENGE_EXPIRY_SECONDS (default 30 minutes) the recovery pass asks the partner,
// cancels the challenge there through the connector port (a void of the authorization),
// and closes the authorization as ERROR CHALLENGE_EXPIRED: the payment fails with its
// payment.failed event, the gauge of challenges by age follows, and the shopper coming
// back late is told so (never a 500). Time moves with the app clock, never the wall's.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type Merchant, type TestApp, returnPath } from '../helpers/app.ts';
import { TestClock } from '../helpers/clock.ts';

const card = (number: string) => ({ type: 'CARD', number, expiry_month: '12', expiry_year: '2031', cvv: '123' });
const MINUTE = 60_000;

describe('3-D Secure challenges left by the shopper expire', () => {
  const clock = new TestClock();
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp({}, { clock: clock.now });
    m = await t.createMerchant('Challenge shop');
  });
  after(() => t.close());

  /** A session and a card payment that stops at its challenge: the ACS page's path and the payment. */
  const challenged = async () => {
    const s = await t.app.inject({
      method: 'POST', url: '/v2/client-sessions', headers: m.auth,
      payload: { amount: 2500, currency: 'EUR', shopper_redirection_url: 'https://shop.example/return' },
    });
    assert.equal(s.statusCode, 200, s.body);
    const session = s.json();
    const res = await t.app.inject({
      method: 'POST', url: '/checkout/v1/session/payments', headers: { 'x-payd-session': session.widget.data },
      payload: { split: [{ partner: 'card-sim', method: 'CARD', amount: 2500, instrument: card('4000000000003220') }] },
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().authorization_status, 'PENDING');
    return { sessionId: session.id as string, paymentId: res.json().payment_id as string, acs: new URL(res.json().redirection.url).pathname };
  };
  const payment = async (id: string) => {
    const res = await t.app.inject({ url: `/v2/payments/${id}`, headers: m.auth });
    assert.equal(res.statusCode, 200, res.body);
    return res.json();
  };
  const events = async (id: string) => (await t.testDb.db.query<{ type: string }>(
    `SELECT type FROM webhook_events WHERE data->>'id' = $1 ORDER BY created_at`, [id])).rows.map((e) => e.type);
  const simOps = async (paymentId: string) => (await t.testDb.db.query<{ kind: string; key: string; status: string }>(
    `SELECT s.kind, s.key, s.status FROM sim_partner_operations s
      WHERE s.key IN (SELECT partner_key FROM partner_transactions WHERE payment_id = $1)
         OR s.key IN (SELECT 'challenge-expiry:' || id FROM partner_transactions WHERE payment_id = $1)
      ORDER BY s.kind`, [paymentId])).rows;
  const gauge = async () => {
    const body = (await t.app.inject({ url: '/metrics' })).body;
    const line = (age: string) => Number(new RegExp(`^payd_3ds_challenges_pending\\{age="${age}"\\} (\\d+)`, 'm').exec(body)?.[1]);
    return { under5: line('under_5m'), from30: line('30m_to_1h'), over1h: line('over_1h') };
  };
  const recover = () => t.app.services.recovery.runOnce();

  it('a challenge left past the limit is cancelled at the partner and the payment fails, once, with payment.failed', async () => {
    const { paymentId } = await challenged();
    const before = await gauge();
    assert.ok(before.under5 >= 1, `the fresh challenge is counted: ${JSON.stringify(before)}`);

    clock.advance(29 * MINUTE);
    await recover();
    assert.equal((await payment(paymentId)).authorization.status, 'PENDING', 'not before its time');

    clock.advance(2 * MINUTE);
    const later = await gauge();
    assert.ok(later.from30 >= 1, `past 30 minutes, it is counted as such: ${JSON.stringify(later)} ${(await t.app.inject({ url: '/metrics' })).body.split('\n').filter((l) => l.includes('3ds')).join(' / ')}`);
    await recover();
    const p = await payment(paymentId);
    assert.equal(p.authorization.status, 'ERROR');
    const tx = p.authorization.partner_transactions[0];
    assert.equal(tx.status, 'ERROR');
    assert.equal(tx.status_code, 'CHALLENGE_EXPIRED');
    assert.match(tx.partner_status_description, /did not complete 3-D Secure within 30 minutes/);
    assert.equal(p.authorization.redirection, undefined, 'no redirection is offered any more');
    assert.deepEqual(await events(paymentId), ['payment.failed']);
    // The partner was asked to cancel what it held, through the port (a void with a key of its own).
    const ops = await simOps(paymentId);
    assert.deepEqual(ops.map((o) => [o.kind, o.status]), [['AUTHORIZATION', 'EXPIRED'], ['VOID', 'SUCCEEDED']]);

    // Another pass (another worker) changes nothing and sends nothing more.
    await recover();
    assert.deepEqual(await events(paymentId), ['payment.failed']);
    assert.equal((await payment(paymentId)).authorization.status, 'ERROR');
  });

  it('the shopper returning late is told the authentication expired and ends on the merchant\'s return with ERROR', async () => {
    const { sessionId, paymentId, acs } = await challenged();
    clock.advance(31 * MINUTE);
    await recover();

    const page = await t.app.inject({ url: acs });
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /authentication has expired/);
    const cont = /href="([^"]+)" id="acs-continue"/.exec(page.body)?.[1];
    assert.ok(cont, page.body);
    // Approving now completes nothing: the partner cancelled the challenge.
    const late = await t.app.inject({ method: 'POST', url: acs, headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'result=pass' });
    assert.equal(late.statusCode, 200);
    assert.match(late.body, /authentication has expired/);
    assert.deepEqual((await simOps(paymentId)).map((o) => o.status), ['EXPIRED', 'SUCCEEDED']);

    // (its address carries a MAC: return-links.ts); at the top of the window, as a browser says
    // (Sec-Fetch-Dest), a redirect; in the widget's modal frame, the page that tells the widget (checkout-api.test.ts).
    const afterAcs = await t.app.inject({ url: new URL(cont).pathname + new URL(cont).search, headers: { 'sec-fetch-dest': 'document' } });
    assert.equal(afterAcs.statusCode, 303, afterAcs.body);
    const to = new URL(String(afterAcs.headers.location), 'http://payd.invalid');
    assert.equal(to.pathname + to.search, returnPath(sessionId));
    const back = await t.app.inject({ url: returnPath(sessionId) });
    assert.equal(back.statusCode, 303, back.body);
    const token = new URL(String(back.headers.location)).searchParams.get('service-redirection-data')!;
    const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString());
    assert.equal(claims.authorization_status, 'ERROR');
    assert.equal((await payment(paymentId)).authorization.status, 'ERROR');
  });

  it('a challenge completed in time is untouched by the expiry', async () => {
    const { paymentId, acs } = await challenged();
    const done = await t.app.inject({ method: 'POST', url: acs, headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'result=pass' });
    assert.equal(done.statusCode, 200);
    assert.equal((await payment(paymentId)).authorization.status, 'AUTHORIZED');
    clock.advance(31 * MINUTE);
    await recover();
    const p = await payment(paymentId);
    assert.equal(p.authorization.status, 'AUTHORIZED');
    assert.equal(p.amounts.available_to_capture ?? p.amounts.total_authorized, 2500);
    assert.deepEqual(await events(paymentId), ['payment.authorized']);
    assert.deepEqual((await simOps(paymentId)).map((o) => [o.kind, o.status]), [['AUTHORIZATION', 'AUTHORIZED']], 'nothing was voided');
  });

  it('a challenge the shopper completed without coming back is recorded as the partner says, not cancelled', async () => {
    const { paymentId, acs } = await challenged();
    // The ACS recorded the approval; payd has not been told (the shopper closed the tab).
    const ref = acs.split('/').pop()!;
    await t.testDb.db.query(`UPDATE sim_partner_operations SET status = 'AUTHORIZED' WHERE reference = $1`, [ref]);
    const stored = await t.app.inject({ url: `/v2/payments/${paymentId}`, headers: { ...m.auth, 'cache-control': 'max-age=60' } });
    assert.equal(stored.json().authorization.status, 'PENDING', 'payd has not asked yet');
    clock.advance(31 * MINUTE);
    await recover();
    assert.equal((await payment(paymentId)).authorization.status, 'AUTHORIZED');
    assert.deepEqual(await events(paymentId), ['payment.authorized']);
    assert.deepEqual((await simOps(paymentId)).map((o) => o.kind), ['AUTHORIZATION'], 'no void was sent');
  });

  it('the gauge counts no challenge once they are settled', async () => {
    const g = await gauge();
    assert.equal(g.under5 + g.from30 + g.over1h, 0, JSON.stringify(g));
  });
});
