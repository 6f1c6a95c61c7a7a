// A crash in the middle of a capture: a real payd process is killed (SIGKILL) while the
// partner call is in flight, then restarted. The replay of the key answers 409 naming
// the operation, and the recovery worker completes the capture exactly once (payd's
// ledger and the acquirer's own ledger agree). Also Recovery.runOnce in-process for a
// capture whose partner answer was lost (timeout test card), and a process stopped with
// SIGTERM during a capture (it lets the capture finish, then exits 0).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { type Db, openDb } from '../../src/platform/db/index.ts';
import { createTestApp, expectProblem, type Merchant, type TestApp } from '../helpers/app.ts';
import type { TestDb } from '../helpers/db.ts';
import { call as plainCall, httpClient, onboard, onboardMerchant, poll, type ProcessDatabase, processDatabase, startPayd, stopAll } from '../helpers/processes.ts';

const card = (number = '4242424242424242') => ({ type: 'CARD', number, expiry_month: '12', expiry_year: '2030', cvv: '123' });
const paymentBody = (amount: number, number?: string) => ({
  amount, currency: 'EUR', split: [{ partner: 'card-sim', method: 'CARD', amount, instrument: card(number) }],
});

// ---- a real payd process ----

const call = httpClient(10_000);
/** A payd process of these tests, ready within 30 s. */
const start = (env: Record<string, string>) => startPayd(env, { readyWithinMs: 30_000 });

/** CAPTURE rows the simulated acquirer holds for an authorization (its own ledger, whatever their status). */
async function acquirerCaptures(db: Db, authorizationReference: string) {
  const { rows } = await db.query<{ key: string; amount: number; status: string }>(
    `SELECT key, amount, status FROM sim_partner_operations WHERE kind = 'CAPTURE' AND parent_ref = $1`,
    [authorizationReference],
  );
  return rows.map((r) => ({ key: r.key, amount: Number(r.amount), status: r.status }));
}

describe('a payd process killed in the middle of a capture', () => {
  let place: ProcessDatabase;
  let testDb: TestDb | undefined;
  let dir: string;

  before(async () => {
    place = await processDatabase('payd-crash-');
    ({ testDb, dir } = place);
  });
  after(async () => {
    await stopAll('SIGKILL');
    await place?.close();
  });

  it('replay answers 409 naming the operation; recovery completes the capture exactly once', async () => {
    // On PostgreSQL the test database; on PGlite a data directory that outlives the process.
    // The acquirer keeps records of every call (PAYD_SIM_INLINE=false), as one across the
    // network does: step 4 reads them.
    const dbEnv: Record<string, string> = { ...place.env, PAYD_SIM_INLINE: 'false' };

    // 1. A fast partner: onboard and authorize, then stop cleanly. The port stays the
    //    same across restarts, so the token's issuer (the base URL) does too.
    let server = await start({ ...dbEnv, PAYD_SIM_LATENCY_MS: '0' });
    const PORT = new URL(server.base).port;
    const { auth } = await onboardMerchant(server.base, { name: 'Crash test', timeoutMs: 10_000 });
    const created = await call(server.base, 'POST', '/v2/payments', auth, paymentBody(10_000));
    assert.equal(created.status, 200, JSON.stringify(created.body));
    assert.equal(created.body!.authorization.status, 'AUTHORIZED');
    const id = created.body!.id as string;
    const authRef = created.body!.authorization.partner_transactions[0].partner_reference as string;
    assert.ok(authRef);
    assert.equal(await server.stop('SIGTERM'), 0, server.output());

    // 2. A slow partner (60 s): the capture is recorded PENDING, then the process dies in
    //    the partner call (it goes there straight from the commit that recorded the
    //    capture), long before the acquirer receives it however busy the machine is.
    server = await start({ ...dbEnv, PORT, PAYD_SIM_LATENCY_MS: '60000', PAYD_PARTNER_TIMEOUT_MS: '90000', PAYD_RECOVERY_GRACE_SECONDS: '120' });
    const keyed = { ...auth, 'x-idempotency-key': 'crash-capture-1' };
    const lost = call(server.base, 'POST', `/v2/payments/${id}/captures`, keyed, { amount: 4000 }).then(
      (r) => ({ answered: r }),
      (err: Error) => ({ error: err }),
    );
    // Wait until the operation is recorded (stored read: no partner is asked).
    const recorded = await poll(
      async () => (await call(server.base, 'GET', `/v2/payments/${id}`, { ...auth, 'cache-control': 'max-age=60' })).body!.captures[0],
      (c) => c !== undefined, { withinMs: 30_000, everyMs: 25 });
    if (recorded) assert.equal(recorded.status, 'PENDING', 'the capture is in the partner call');
    const opId: string | undefined = recorded?.id;
    assert.ok(opId, `the capture was recorded within 30 s:\n${server.output()}`);
    assert.equal(await server.stop('SIGKILL'), null, 'killed by the signal');
    const outcome = await lost;
    assert.ok('error' in outcome, `the first call lost its response, got ${JSON.stringify((outcome as any).answered)}`);

    // 3. Restart with a fast partner and no recovery pass for now (an interval of ten
    //    minutes), so that the replay below meets the capture still PENDING however long
    //    the start-up takes on a busy machine.
    const restart = (recoveryIntervalMs: string) => start({
      ...dbEnv, PORT, PAYD_SIM_LATENCY_MS: '0', PAYD_RECOVERY_GRACE_SECONDS: '1', PAYD_PARTNER_TIMEOUT_MS: '500', PAYD_RECOVERY_INTERVAL_MS: recoveryIntervalMs,
      PAYD_IDEMPOTENCY_HOLD_ATTEMPTS: '2', PAYD_IDEMPOTENCY_HOLD_INTERVAL_MS: '50',
    });
    server = await restart('600000');
    const before = await call(server.base, 'GET', `/v2/payments/${id}`, { ...auth, 'cache-control': 'max-age=60' });
    assert.equal(before.body!.captures.length, 1);
    assert.equal(before.body!.captures[0].id, opId);
    assert.equal(before.body!.captures[0].status, 'PENDING', 'the crash left the capture PENDING');
    assert.equal(before.body!.amounts.total_captured, 0, 'nothing captured yet');

    // The client retries with the same key after the lost response: 409 naming the operation.
    const replay = await call(server.base, 'POST', `/v2/payments/${id}/captures`, keyed, { amount: 4000 });
    assert.equal(replay.status, 409, JSON.stringify(replay.body));
    assert.match(String(replay.headers.get('content-type')), /^application\/problem\+json/);
    assert.deepEqual(
      { type: replay.body!.type, title: replay.body!.title, status: replay.body!.status, instance: replay.body!.instance, resource_id: replay.body!.resource_id },
      { type: 'urn:eu.service:write-conflict', title: 'Idempotency violation', status: 409, instance: `/v2/payments/${id}/captures`, resource_id: opId },
    );

    // Restarted with a recovery pass every 200 ms, the worker settles it; read stored
    // data only, so that it is the worker, not this read, that does it.
    assert.equal(await server.stop('SIGTERM'), 0, server.output());
    server = await restart('200');
    const payment = await poll(
      async () => (await call(server.base, 'GET', `/v2/payments/${id}`, { ...auth, 'cache-control': 'max-age=60' })).body!,
      (p) => p.captures[0]?.status !== 'PENDING', { withinMs: 15_000, everyMs: 200 });
    assert.equal(payment.captures.length, 1, JSON.stringify(payment.captures));
    assert.equal(payment.captures[0].id, opId);
    assert.equal(payment.captures[0].status, 'SUCCESS', `recovered within 15 s:\n${server.output()}`);
    assert.equal(payment.captures[0].amount, 4000);
    assert.equal(payment.captures[0].partner_transactions.length, 1);
    assert.equal(payment.captures[0].partner_transactions[0].status, 'SUCCESS');
    assert.equal(payment.amounts.total_captured, 4000);
    assert.equal(payment.amounts.available_to_capture, 6000);
    assert.equal(payment.overview.captured, 'PARTIALLY');

    // A late replay (another kind reusing the key, too) still names the same operation.
    const late = await call(server.base, 'POST', `/v2/payments/${id}/refunds`, keyed, { amount: 100 });
    assert.equal(late.status, 409);
    assert.equal(late.body!.resource_id, opId);
    // A GET that asks the partners changes nothing more.
    const synced = (await call(server.base, 'GET', `/v2/payments/${id}`, auth)).body!;
    assert.equal(synced.amounts.total_captured, 4000);
    assert.equal(synced.captures.length, 1);
    // The rest of the amount is still capturable, exactly.
    const rest = await call(server.base, 'POST', `/v2/payments/${id}/captures`, auth, { amount: 6000 });
    assert.equal(rest.status, 200, JSON.stringify(rest.body));
    assert.equal(rest.body!.amounts.total_captured, 10_000);
    assert.equal((await call(server.base, 'POST', `/v2/payments/${id}/captures`, auth, { amount: 1 })).status, 400);
    assert.equal(await server.stop('SIGTERM'), 0, server.output());

    // 4. The acquirer's own ledger: the crashed capture reached it exactly once.
    const ledgerDb: Db = testDb ? testDb.db : await openDb({ databaseUrl: undefined, dbPoolSize: 1, dataDir: dir });
    try {
      const captures = await acquirerCaptures(ledgerDb, authRef);
      const crashed = captures.filter((c) => c.key.startsWith(`${opId}:`));
      assert.deepEqual(crashed, [{ key: `${opId}:1`, amount: 4000, status: 'SUCCEEDED' }]);
      assert.equal(captures.length, 2, 'the crashed capture and the later one, nothing else');
      assert.equal(captures.reduce((s, c) => s + c.amount, 0), 10_000);
      const { rows } = await ledgerDb.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM partner_transactions WHERE payment_id = $1 AND kind = 'CAPTURE' AND status = 'PENDING'`, [id]);
      assert.equal(Number(rows[0]!.n), 0);
    } finally {
      if (!testDb) await ledgerDb.close();
    }
  });
});

describe('Recovery.runOnce in-process', () => {
  let t: TestApp;
  let m: Merchant;
  // The simulators' time, standing still until a test moves it: a timed-out capture's
  // outcome shows then, however long the steps before took.
  let simNow = Date.now();
  /** A recovery pass with no grace, repeated until it looks at something (a row is stale only once its last update is in the database's past). */
  const runUntilLooked = () => poll(() => t.app.services.recovery.runOnce(0), (n) => n >= 1, { everyMs: 10 });
  before(async () => {
    t = await createTestApp({}, { clock: () => simNow });
    m = await t.createMerchant('Recovery');
  });
  after(() => t.close());

  it('settles a PENDING capture (timeout card) to SUCCESS once the partner has it, and only then', async () => {
    // 4000000000000416: authorized; captures time out at the acquirer, whose sync shows
    // them succeeded a second later (by the simulators' clock).
    const created = await t.app.inject({ method: 'POST', url: '/v2/payments', headers: m.auth, payload: paymentBody(5000, '4000000000000416') });
    assert.equal(created.json().authorization.status, 'AUTHORIZED', created.body);
    const id = created.json().id as string;
    const cap = await t.app.inject({ method: 'POST', url: `/v2/payments/${id}/captures`, headers: { ...m.auth, 'x-idempotency-key': 'rec-1' }, payload: { amount: 3000 } });
    assert.equal(cap.statusCode, 200, cap.body);
    const opId = cap.headers['x-created-operation-id'] as string;
    assert.equal(cap.json().captures[0].status, 'PENDING');
    assert.equal(cap.json().amounts.total_captured, 0);
    const stored = () => t.app.services.payments.getStored(m.entityId, id);

    // With the default grace period (60 s) a fresh PENDING transaction is left alone.
    assert.equal(await t.app.services.recovery.runOnce(), 0);
    // With no grace it is looked at, but the acquirer has not finished: still PENDING.
    assert.ok((await runUntilLooked()) >= 1);
    let p = await stored();
    assert.equal(p.captures[0]!.status, 'PENDING');
    assert.equal(p.amounts.total_captured, 0);
    // The amount stays reserved meanwhile.
    expectProblem(await t.app.inject({ method: 'POST', url: `/v2/payments/${id}/captures`, headers: m.auth, payload: { amount: 2001 } }), 400);

    simNow += 1200;
    assert.ok((await runUntilLooked()) >= 1);
    p = await stored();
    assert.equal(p.captures.length, 1);
    assert.equal(p.captures[0]!.id, opId);
    assert.equal(p.captures[0]!.status, 'SUCCESS');
    assert.equal(p.captures[0]!.partner_transactions[0]!.status, 'SUCCESS');
    assert.equal(p.amounts.total_captured, 3000);
    assert.equal(p.amounts.available_to_capture, 2000);

    // Nothing left for recovery, and running it again changes nothing.
    assert.equal(await t.app.services.recovery.runOnce(0), 0);
    const again = await stored();
    assert.equal(again.version, p.version);
    assert.equal(again.amounts.total_captured, 3000);
    const authRef = p.authorization.partner_transactions[0]!.partner_reference as string;
    assert.deepEqual(await acquirerCaptures(t.testDb.db, authRef), [{ key: `${opId}:1`, amount: 3000, status: 'SUCCEEDED' }]);
    // The replay names the settled operation.
    const replay = await t.app.inject({ method: 'POST', url: `/v2/payments/${id}/captures`, headers: { ...m.auth, 'x-idempotency-key': 'rec-1' }, payload: { amount: 3000 } });
    assert.equal(expectProblem(replay, 409).resource_id, opId);
  });

  it('gives up an authorization the partner never received (ERROR), leaving nothing PENDING', async () => {
    // Simulates a crash between recording an authorization and calling the partner:
    // a payment left processing with a PENDING authorization the acquirer never saw.
    const created = await t.app.inject({ method: 'POST', url: '/v2/payments', headers: m.auth, payload: paymentBody(1000) });
    const id = created.json().id as string;
    await t.testDb.db.query(`UPDATE payments SET processing = true, authorization_status = 'PENDING' WHERE id = $1`, [id]);
    await t.testDb.db.query(
      `UPDATE partner_transactions SET status = 'PENDING', partner_key = partner_key || ':lost', partner_reference = NULL,
         created_at = now() - interval '1 hour' WHERE payment_id = $1`, [id]); // long past the partner call's deadline
    assert.ok((await runUntilLooked()) >= 1);
    const p = await t.app.services.payments.getStored(m.entityId, id);
    assert.equal(p.authorization.status, 'ERROR');
    assert.equal(p.authorization.partner_transactions[0]!.status, 'ERROR');
    assert.equal(p.amounts.total_authorized, 0);
    assert.equal(await t.app.services.recovery.runOnce(0), 0);
  });
});

describe('a payd process killed after a split failed, before its authorized part was released', () => {
  let place: ProcessDatabase;
  before(async () => {
    place = await processDatabase('payd-reversal-');
  });
  after(async () => {
    await stopAll('SIGKILL');
    await place?.close();
  });

  // The payment's failure and the reversal of its gift card are committed together, so a
  // crash before the partner is called leaves a PENDING void that recovery sends. Before,
  // the reversal was recorded only after the failure's commit: killed in between, the gift
  // card stayed held for good (the kill storm found it, seed 209605466).
  it('recovery releases the gift card: the void is recorded with the failure', async () => {
    const dbEnv: Record<string, string> = place.env;
    let server = await start(dbEnv);
    const PORT = new URL(server.base).port;
    const m = await onboard(server.base);
    assert.equal(await server.stop('SIGTERM'), 0, server.output());

    server = await start({ ...dbEnv, PORT, PAYD_FAULT_KILL_AT: 'reversal:before-send', PAYD_RECOVERY_INTERVAL_MS: '600000' });
    const gift = `60362800${String(Date.now()).slice(-8)}`;
    const lost = await call(server.base, 'POST', '/v2/payments', m.auth, {
      amount: 5000, currency: 'EUR', order: { reference: 'split-crash' },
      split: [
        { partner: 'gift-sim', method: 'GIFT_CARD', amount: 2000, instrument: { type: 'GIFT_CARD', number: gift } },
        { partner: 'card-sim', method: 'CARD', amount: 3000, instrument: card('4000000000000002') },
      ],
    }).then((r) => ({ answered: r }), (error: Error) => ({ error }));
    assert.ok('error' in lost, `killed before answering, got ${JSON.stringify((lost as { answered?: unknown }).answered)}`);
    assert.equal(await server.stop('SIGKILL'), null);

    server = await start({ ...dbEnv, PORT, PAYD_RECOVERY_GRACE_SECONDS: '1', PAYD_PARTNER_TIMEOUT_MS: '500', PAYD_RECOVERY_INTERVAL_MS: '200' });
    const list = await call(server.base, 'GET', '/v2/payments?order_reference=split-crash', m.auth);
    assert.equal(list.status, 200, JSON.stringify(list.body));
    const id = (list.body!.data as { id: string }[])[0]!.id;
    const payment = await poll(
      async () => (await call(server.base, 'GET', `/v2/payments/${id}`, { ...m.auth, 'cache-control': 'max-age=60' })).body!,
      (p) => p.voids?.[0]?.status === 'SUCCESS', { withinMs: 15_000, everyMs: 100 });
    assert.equal(payment.authorization.status, 'REFUSED');
    assert.equal(payment.voids.length, 1, JSON.stringify(payment.voids));
    assert.equal(payment.voids[0].status, 'SUCCESS', 'recovery sent the void');
    assert.equal(payment.amounts.total_voided, 2000, 'the gift card is released');
    // The gift card's balance is whole again: a new authorization of all of it passes.
    const again = await call(server.base, 'POST', '/v2/payments', m.auth, {
      amount: 50000, currency: 'EUR', split: [{ partner: 'gift-sim', method: 'GIFT_CARD', amount: 50000, instrument: { type: 'GIFT_CARD', number: gift } }],
    });
    assert.equal(again.body!.authorization.status, 'AUTHORIZED', JSON.stringify(again.body!.authorization));
    assert.equal(await server.stop('SIGTERM'), 0, server.output());
  });
});

/** Until a capture of the payment is recorded (stored read: no partner is asked), so that a signal finds it in the partner call. */
const captureRecorded = (base: string, auth: Record<string, string>, paymentId: string) => poll(
  async () => (await plainCall(base, 'GET', `/v2/payments/${paymentId}`, { ...auth, 'cache-control': 'max-age=60' })).body!.captures[0],
  (c) => c !== undefined, { withinMs: 30_000, everyMs: 25 });

describe('a payd process stopped during a capture (SIGTERM, SIGKILL), plain HTTP clients', () => {
  /** Where the spawned servers keep their data: the test's PostgreSQL database, or a PGlite data dir. */
  let place: ProcessDatabase;
  let testDb: TestDb | undefined;
  before(async () => {
    place = await processDatabase('payd-proc-');
    testDb = place.testDb;
  });
  after(async () => {
    await place?.close();
  });

  it('SIGTERM lets an in-flight capture finish, then exits 0', async () => {
    const server = await startPayd({ ...place.env, PAYD_SIM_LATENCY_MS: '800' });
    const m = await onboard(server.base);
    const p = await plainCall(server.base, 'POST', '/v2/payments', m.auth, paymentBody(5000));
    const inFlight = plainCall(server.base, 'POST', `/v2/payments/${p.body!.id}/captures`, m.auth, { amount: 5000 });
    await captureRecorded(server.base, m.auth, p.body!.id);
    const exit = server.stop('SIGTERM');
    const res = await inFlight;
    assert.equal(res.status, 200);
    assert.equal(res.body!.captures[0].status, 'SUCCESS');
    assert.equal(await exit, 0);
    await assert.rejects(fetch(`${server.base}/healthz`), 'no longer accepting connections');
  });

  it('a process killed during a capture: the replay answers 409, recovery completes it exactly once', async () => {
    let server = await startPayd(place.env);
    const PORT = new URL(server.base).port;
    const m = await onboard(server.base);
    const p = await plainCall(server.base, 'POST', '/v2/payments', m.auth, paymentBody(10_000));
    assert.equal(p.body!.authorization.status, 'AUTHORIZED');
    assert.equal(await server.stop(), 0);

    // Slow partner: the capture is recorded PENDING, then the process dies mid-call.
    server = await startPayd({ ...place.env, PORT, PAYD_SIM_LATENCY_MS: '3000' });
    const key = { ...m.auth, 'x-idempotency-key': 'capture-crash-1' };
    const inFlight = plainCall(server.base, 'POST', `/v2/payments/${p.body!.id}/captures`, key, { amount: 4000 }).catch((e: Error) => e);
    await captureRecorded(server.base, m.auth, p.body!.id);
    await server.stop('SIGKILL');
    const lost = await inFlight;
    assert.ok(lost instanceof Error, `the first call lost its response: ${JSON.stringify(lost)}`);

    server = await startPayd({ ...place.env, PORT, PAYD_RECOVERY_GRACE_SECONDS: '1', PAYD_PARTNER_TIMEOUT_MS: '500', PAYD_RECOVERY_INTERVAL_MS: '300' });
    try {
      const replay = await plainCall(server.base, 'POST', `/v2/payments/${p.body!.id}/captures`, key, { amount: 4000 });
      assert.equal(replay.status, 409);
      assert.equal(replay.body!.type, 'urn:eu.service:write-conflict');
      const opId = replay.body!.resource_id as string;
      const payment = await poll(
        async () => (await plainCall(server.base, 'GET', `/v2/payments/${p.body!.id}`, { ...m.auth, 'cache-control': 'max-age=0' })).body,
        (v) => v!.captures[0]?.status === 'SUCCESS', { withinMs: 20_000, everyMs: 200 });
      assert.equal(payment!.captures.length, 1);
      assert.equal(payment!.captures[0].id, opId);
      assert.equal(payment!.captures[0].status, 'SUCCESS');
      assert.equal(payment!.amounts.total_captured, 4000);
      assert.equal(payment!.amounts.available_to_capture, 6000);
      // A second replay still names the same operation; nothing ran twice.
      const again = await plainCall(server.base, 'POST', `/v2/payments/${p.body!.id}/captures`, key, { amount: 4000 });
      assert.equal(again.body!.resource_id, opId);
      if (testDb) {
        const { rows } = await testDb.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM sim_partner_operations WHERE kind = 'CAPTURE' AND key LIKE $1`, [`${opId}:%`]);
        assert.equal(rows[0]!.n, 1, 'the acquirer received the capture exactly once');
      }
    } finally {
      await server.stop();
    }
  });
});
