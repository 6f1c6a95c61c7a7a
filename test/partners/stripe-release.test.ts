// Issue 44, item 8: Stripe captures a charge once (capturesOnce), so a partial capture
// releases the rest of the hold there. payd records that release (a SYSTEM void of the
// rest, key release:<capture id>) with the capture's conclusion, whichever path concludes
// it: the merchant's request (the answer inline), a late answer, a read that syncs, the
// recovery worker, a Stripe notification, and a process killed around the capture. After
// each, the payment is as the inline path leaves it (0 left to capture, the rest voided),
// a second capture is refused by payd without a call to Stripe, and the money invariants
// hold. payd calls stripe-stateful-mock over real HTTP, through a fault proxy that can
// hold a call (an answer that comes late, or never).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { type Db, openDb } from '../../src/platform/db/index.ts';
import { parsePartners } from '../../src/partners/partners-config.ts';
import { createTestApp, expectProblem, type Merchant, type TestApp } from '../helpers/app.ts';
import { type FaultProxy, startFaultProxy } from '../helpers/fault-proxy.ts';
import { moneyInvariants } from '../helpers/invariants.ts';
import { call, onboardMerchant, poll, type ProcessDatabase, processDatabase, startPayd, stopAll, waitFor } from '../helpers/processes.ts';
import { startStripeMock, type StripeMock } from '../helpers/stripe-mock.ts';

const SECRET = 'sk_test_payd_release';
const WEBHOOK_SECRET = 'whsec_payd_release_secret';
const year = String(new Date().getFullYear() + 2);
const card = { type: 'CARD', number: '4242424242424242', expiry_month: '11', expiry_year: year, cvv: '123' };
const stripePart = (amount: number) => ({ partner: 'stripe', method: 'CARD', amount, instrument: card });
const giftPart = (amount: number) => ({
  partner: 'gift-sim', method: 'GIFT_CARD', amount, instrument: { type: 'GIFT_CARD', number: `6036${randomBytes(5).readUIntBE(0, 5).toString().padStart(10, '0').slice(0, 10)}42` },
});

/** What the paths must agree on: statuses, amounts, and each operation as the API shows it. */
function summary(p: any) {
  const op = (o: any) => ({ amount: o.amount, status: o.status, triggered_by: o.triggered_by, reason: o.reason,
    rows: o.partner_transactions.map((x: any) => [x.partner, x.status, x.amount, ...(o.triggered_by === 'SYSTEM' ? [x.partner_status, x.status_code] : [])]) });
  return { status: p.authorization.status, amounts: p.amounts, overview: p.overview, captures: p.captures.map(op), voids: p.voids.map(op), refunds: p.refunds.length };
}

/** Stripe's own view of a charge (straight to the mock, not through the proxy). */
async function stripeCharge(mock: StripeMock, id: string, capture?: number): Promise<Record<string, unknown>> {
  const res = await fetch(`${mock.url}/v1/charges/${id}${capture ? '/capture' : ''}`, {
    method: capture ? 'POST' : 'GET',
    headers: { authorization: `Bearer ${SECRET}`, ...(capture ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
    ...(capture ? { body: `amount=${capture}` } : {}),
  });
  return res.json() as Promise<Record<string, unknown>>;
}

describe('a partial capture at Stripe (capture once): the rest released with the capture, on every path', () => {
  let mock: StripeMock;
  let proxy: FaultProxy;
  let t: TestApp;
  let m: Merchant;
  /** The payment as the inline path leaves it (the first test): what every other path must give. */
  let inline: ReturnType<typeof summary> | undefined;

  const post = (url: string, payload: object) => t.app.inject({ method: 'POST', url, headers: { ...m.auth, 'idempotency-key': randomUUID() }, payload });
  /** The payment as stored: no partner is asked. */
  const stored = async (id: string) => (await t.app.inject({ url: `/v2/payments/${id}`, headers: { ...m.auth, 'cache-control': 'max-age=60' } })).json();

  before(async () => {
    mock = await startStripeMock();
    proxy = await startFaultProxy({ port: Number(new URL(mock.url).port) });
    t = await createTestApp({
      partnerTimeoutMs: 3000,
      partners: parsePartners(JSON.stringify([{ name: 'stripe', secret_key: SECRET, webhook_secret: WEBHOOK_SECRET, api_base: proxy.rewrite(mock.url) }]), {}),
    });
    m = await t.createMerchant();
  });
  after(async () => {
    await t?.close();
    await proxy?.close();
    await mock?.stop();
  });

  /** A payment of 5000 held at Stripe. */
  async function held(): Promise<{ id: string; charge: string }> {
    const res = await post('/v2/payments', { amount: 5000, currency: 'EUR', capture_mode: 'MANUAL', split: [stripePart(5000)] });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().authorization.status, 'AUTHORIZED', res.body);
    return { id: res.json().id, charge: res.json().authorization.partner_transactions[0].partner_reference };
  }

  /** A capture of 3000 whose call the proxy holds: payd answers once its partner timeout is over, the capture PENDING. */
  async function captureUnanswered(id: string): Promise<string> {
    await proxy.set('blackhole');
    const res = await post(`/v2/payments/${id}/captures`, { amount: 3000 });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json().captures.map((c: { status: string }) => c.status), ['PENDING'], res.body);
    assert.deepEqual(res.json().voids, [], 'nothing released while the capture is in flight');
    return res.headers['x-created-operation-id'] as string;
  }

  /** The held call is dropped before it reaches Stripe, which captures the charge all the same (the call got there; its answer was lost). */
  async function capturedAtStripeMeanwhile(charge: string): Promise<void> {
    proxy.resetAll();
    await proxy.set('pass');
    const c = await stripeCharge(mock, charge, 3000);
    assert.equal(c.captured, true, JSON.stringify(c));
  }

  /** After the capture concluded: the payment as the inline path leaves it; a second capture is refused by payd; the invariants hold. */
  async function assertReleased(id: string, captureId: string, charge: string, path: string): Promise<void> {
    const p = await stored(id);
    assert.deepEqual(p.captures.map((c: { id: string; status: string }) => [c.id, c.status]), [[captureId, 'SUCCESS']], `${path}: ${JSON.stringify(p.captures)}`);
    assert.equal(p.amounts.available_to_capture, 0, `${path}: the rest was released by Stripe: ${JSON.stringify(p.amounts)}`);
    assert.equal(p.amounts.total_voided, 2000, `${path}: the rest counts as voided`);
    assert.deepEqual(summary(p), inline, `${path}: the payment is as the inline path leaves it`);
    const { rows: voids } = await t.testDb.db.query<{ id: string; idempotency_key: string }>(
      `SELECT id, idempotency_key FROM payment_operations WHERE payment_id = $1 AND kind = 'VOID'`, [id]);
    assert.deepEqual(voids.map((v) => v.idempotency_key), [`release:${captureId}`], `${path}: the release is keyed by the capture`);
    const { rows: events } = await t.testDb.db.query<{ type: string }>(
      `SELECT type FROM webhook_events WHERE data->>'id' = $1 AND data->>'operation_id' = $2`, [id, voids[0]!.id]);
    assert.deepEqual(events.map((e) => e.type), ['payment.voided'], `${path}: the release's event`);

    const again = await post(`/v2/payments/${id}/captures`, { amount: 2000 });
    assert.equal(expectProblem(again, 400).type, 'urn:eu.service:amount-not-available', again.body);
    assert.deepEqual((await stored(id)).captures.map((c: { status: string }) => c.status), ['SUCCESS'], `${path}: no capture was sent to Stripe`);
    const atStripe = await stripeCharge(mock, charge);
    assert.equal(atStripe.amount_captured ?? atStripe.amount, 3000);

    const report = await moneyInvariants(t.testDb.db);
    assert.deepEqual(report.violations, [], path);
    assert.equal(report.pending, 0, `${path}: nothing left PENDING`);
  }

  it('(a) the answer inline in the merchant\'s request: the capture\'s answer shows the release', async () => {
    const { id, charge } = await held();
    const res = await post(`/v2/payments/${id}/captures`, { amount: 3000 });
    assert.equal(res.statusCode, 200, res.body);
    const p = res.json();
    assert.equal(res.headers['x-created-operation-id'], p.captures[0].id, 'the answer names the capture');
    assert.deepEqual(p.amounts, {
      authorize_pending: 0, total_authorized: 5000, total_voided: 2000, available_to_void: 0,
      total_captured: 3000, available_to_capture: 0, total_refunded: 0, available_to_refund: 3000,
    });
    assert.deepEqual(p.voids.map((v: Record<string, unknown>) => [v.amount, v.status, v.triggered_by]), [[2000, 'SUCCESS', 'SYSTEM']]);
    inline = summary(p);
    await assertReleased(id, p.captures[0].id, charge, 'inline');
  });

  it('(b) Stripe\'s answer comes after payd stopped waiting: the late answer concludes the capture with the release', async () => {
    const { id, charge } = await held();
    const captureId = await captureUnanswered(id);
    await proxy.set('pass'); // the held call reaches Stripe now, and its answer comes back late
    await waitFor(async () => (await stored(id)).captures[0].status === 'SUCCESS', { what: 'the late answer to conclude the capture' });
    await assertReleased(id, captureId, charge, 'late answer');
  });

  it('(b) the answer is lost: a read that asks Stripe concludes the capture with the release', async () => {
    const { id, charge } = await held();
    const captureId = await captureUnanswered(id);
    await capturedAtStripeMeanwhile(charge);
    const synced = await t.app.inject({ url: `/v2/payments/${id}`, headers: m.auth });
    assert.equal(synced.statusCode, 200, synced.body);
    assert.deepEqual(summary(synced.json()), inline, 'the read answers with the release');
    await assertReleased(id, captureId, charge, 'sync');
  });

  it('(b) the answer is lost: the recovery worker concludes the capture with the release', async () => {
    const { id, charge } = await held();
    const captureId = await captureUnanswered(id);
    await capturedAtStripeMeanwhile(charge);
    // (A row is stale for a pass with no grace once its last update is in the database's past.)
    await poll(() => t.app.services.recovery.runOnce(0), (n) => n >= 1, { everyMs: 10 });
    await assertReleased(id, captureId, charge, 'recovery');
  });

  it('(c) the answer is lost: Stripe\'s charge.captured notification concludes the capture with the release', async () => {
    const { id, charge } = await held();
    const captureId = await captureUnanswered(id);
    await capturedAtStripeMeanwhile(charge);
    const payload = JSON.stringify({ id: `evt_${randomUUID()}`, object: 'event', type: 'charge.captured', data: { object: await stripeCharge(mock, charge) } });
    const { default: Stripe } = await import('stripe');
    const signature = new Stripe(SECRET).webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET });
    const res = await t.app.inject({ method: 'POST', url: '/partners/stripe/webhooks', headers: { 'content-type': 'application/json', 'stripe-signature': signature }, payload });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { received: true, applied: 1 });
    await assertReleased(id, captureId, charge, 'notification');
  });
});

describe('(d) a payd process killed around a partial capture at Stripe', () => {
  let place: ProcessDatabase;
  let mock: StripeMock;

  before(async () => {
    place = await processDatabase('payd-release-');
    mock = await startStripeMock();
  });
  after(async () => {
    await stopAll('SIGKILL');
    await place?.close();
    await mock?.stop();
  });

  it('right after the capture concluded: the release was committed with it; after the answer was recorded: recovery concludes with the release', async () => {
    const env = {
      ...place.env, PAYD_PARTNERS: JSON.stringify([{ name: 'stripe', secret_key: SECRET, api_base: mock.url }, { name: 'gift-sim' }]),
      PAYD_PARTNER_TIMEOUT_MS: '2000', PAYD_RECOVERY_INTERVAL_MS: '600000', PAYD_RECOVERY_GRACE_SECONDS: '3',
    };
    const start = (more: Record<string, string>) => startPayd({ ...env, ...more }, { readyWithinMs: 60_000 });

    // 1. Killed between the capture's conclusion and its answer (the step after which the
    //    release used to be made): nothing is left to make it.
    let server = await start({ PAYD_FAULT_KILL_AT: 'capture:after-finalize' });
    const PORT = new URL(server.base).port;
    const { auth } = await onboardMerchant(server.base, { name: 'Release', timeoutMs: 10_000 });
    const one = await call(server.base, 'POST', '/v2/payments', auth, { amount: 5000, currency: 'EUR', capture_mode: 'MANUAL', split: [stripePart(5000)] });
    assert.equal(one.body!.authorization.status, 'AUTHORIZED', JSON.stringify(one.body));
    const oneId = one.body!.id as string;
    const lostOne = await call(server.base, 'POST', `/v2/payments/${oneId}/captures`, auth, { amount: 3000 }).catch((e: Error) => e);
    assert.ok(lostOne instanceof Error, 'the answer was lost');
    assert.equal(await server.stop('SIGKILL'), null, `killed at the step:\n${server.output()}`);

    // 2. Killed after the partner's answers were recorded, before the conclusion: a split
    //    whose capture draws on the gift card and on Stripe (two answers, then the conclusion).
    server = await start({ PORT, PAYD_FAULT_KILL_AT: 'capture:after-record' });
    const two = await call(server.base, 'POST', '/v2/payments', auth, { amount: 7000, currency: 'EUR', capture_mode: 'MANUAL', split: [giftPart(2000), stripePart(5000)] });
    assert.equal(two.body!.authorization.status, 'AUTHORIZED', JSON.stringify(two.body));
    const twoId = two.body!.id as string;
    const lostTwo = await call(server.base, 'POST', `/v2/payments/${twoId}/captures`, auth, { amount: 5000 }).catch((e: Error) => e);
    assert.ok(lostTwo instanceof Error, 'the answer was lost');
    assert.equal(await server.stop('SIGKILL'), null, `killed at the step:\n${server.output()}`);

    // Restarted, no recovery pass yet: the first payment is released already (stored read).
    server = await start({ PORT });
    const stored = async (id: string) => (await call(server.base, 'GET', `/v2/payments/${id}`, { ...auth, 'cache-control': 'max-age=60' })).body!;
    const first = await stored(oneId);
    assert.deepEqual(first.captures.map((c: { status: string }) => c.status), ['SUCCESS']);
    assert.equal(first.amounts.available_to_capture, 0, `committed with the capture: ${JSON.stringify(first.amounts)}`);
    assert.deepEqual(first.voids.map((v: Record<string, unknown>) => [v.amount, v.status, v.triggered_by]), [[2000, 'SUCCESS', 'SYSTEM']]);
    const second = await stored(twoId);
    assert.deepEqual(second.captures.map((c: { status: string }) => c.status), ['PENDING'], 'the capture is not concluded yet');
    assert.deepEqual(second.voids, []);
    assert.equal(await server.stop('SIGTERM'), 0, server.output());

    // Recovery concludes the second one, with its release.
    server = await start({ PORT, PAYD_RECOVERY_INTERVAL_MS: '200' });
    const concluded = await waitFor(async () => {
      const p = await stored(twoId);
      return p.captures[0].status !== 'PENDING' && p;
    }, { what: 'recovery to conclude the capture', timeout: 30_000 });
    assert.deepEqual(concluded.captures.map((c: { status: string }) => c.status), ['SUCCESS']);
    assert.equal(concluded.amounts.total_captured, 5000);
    assert.equal(concluded.amounts.available_to_capture, 0, JSON.stringify(concluded.amounts));
    assert.deepEqual(concluded.voids.map((v: Record<string, unknown>) => [v.amount, v.status, v.triggered_by]), [[2000, 'SUCCESS', 'SYSTEM']],
      'the rest of the Stripe part (5000 − 3000) is released, not the gift card');

    for (const id of [oneId, twoId]) {
      const again = await call(server.base, 'POST', `/v2/payments/${id}/captures`, auth, { amount: 1 });
      assert.equal(again.status, 400, JSON.stringify(again.body));
      assert.equal(again.body!.type, 'urn:eu.service:amount-not-available');
      assert.equal((await stored(id)).captures.length, 1, 'nothing was sent to Stripe');
    }
    assert.equal(await server.stop('SIGTERM'), 0, server.output());

    const db: Db = place.testDb ? place.testDb.db : await openDb({ databaseUrl: undefined, dbPoolSize: 1, dataDir: place.dir });
    try {
      const report = await moneyInvariants(db);
      assert.deepEqual(report.violations, []);
      assert.equal(report.pending, 0);
      const { rows } = await db.query<{ payment_id: string; idempotency_key: string; capture: string }>(
        `SELECT v.payment_id, v.idempotency_key, c.id AS capture FROM payment_operations v
           JOIN payment_operations c ON c.payment_id = v.payment_id AND c.kind = 'CAPTURE'
          WHERE v.kind = 'VOID' ORDER BY v.payment_id = $1 DESC`, [oneId]);
      assert.deepEqual(rows.map((r) => r.idempotency_key), rows.map((r) => `release:${r.capture}`), 'each release keyed by its capture');
      assert.equal(rows.length, 2);
    } finally {
      if (!place.testDb) await db.close();
    }
  });
});
