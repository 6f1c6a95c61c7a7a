// Recovery settles everything exactly once: one deterministic reproduction
// per defect, each built from a held row lock on a second connection (so a partner, or
// payd itself, is stopped at a chosen point), a kill at a chosen step, or a partner
// whose answer comes late. They run on PostgreSQL (always present; the database named
// by DATABASE_URL, else the local server): a second connection that holds a lock is
// what PGlite, with its single connection, cannot give.
if (!process.env.DATABASE_URL) process.env.DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test';

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import { loadConfig, ConfigError } from '../../src/config.ts';
import { Recovery } from '../../src/payments/recovery.ts';
import { DatabaseUnavailableError } from '../../src/platform/db/errors.ts';
import type { PartnerConnector } from '../../src/partners/port.ts';
import { createTestApp, type Merchant, type TestApp } from '../helpers/app.ts';
import { call, emptyPgDatabase, onboard, type PaydProcess, type PgDatabase, startPayd, waitFor } from '../helpers/processes.ts';

const giftNumber = () => `6000${randomBytes(6).readUIntBE(0, 6).toString().padStart(10, '0').slice(0, 10)}42`; // 50000 at first
const giftId = (number: string) => createHash('sha256').update(`gift-sim:${number}`).digest('hex');
const gift = (amount: number, number: string) => ({ partner: 'gift-sim', method: 'GIFT_CARD', amount, instrument: { type: 'GIFT_CARD', number, pin: '1234' } });
const card = (amount: number, number = '4242424242424242') => ({
  partner: 'card-sim', method: 'CARD', amount, instrument: { type: 'CARD', number, expiry_month: '12', expiry_year: '2030', cvv: '123' },
});

/** A second connection holding row locks in an open transaction, as psql would. */
async function lockRows(url: string, sql: string, params: unknown[]): Promise<{ release(): Promise<void> }> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  await c.query('BEGIN');
  const { rowCount } = await c.query(sql, params);
  assert.ok(rowCount && rowCount > 0, `locked nothing with ${sql}`);
  return {
    async release() {
      await c.query('COMMIT');
      await c.end();
    },
  };
}

/** A partner that takes authorizations but acts on them only after go() (then runs answered(), if any). */
function holdAuthorizations(sim: PartnerConnector, answered?: () => void): { go(): void; restore(): void } {
  const authorize = sim.authorize;
  let go!: () => void;
  const gate = new Promise<void>((resolve) => {
    go = resolve;
  });
  sim.authorize = async (req) => {
    await gate;
    const answer = await authorize.call(sim, req);
    answered?.();
    return answer;
  };
  return {
    go,
    restore() {
      go();
      sim.authorize = authorize;
    },
  };
}

async function lockWaiters(t: TestApp): Promise<number> {
  const { rows } = await t.testDb.db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
  return Number(rows[0]!.n);
}

async function giftBalance(t: TestApp, number: string): Promise<number> {
  const { rows } = await t.testDb.db.query<{ balance: number }>('SELECT balance FROM sim_gift_cards WHERE fingerprint = $1', [giftId(number)]);
  return Number(rows[0]!.balance);
}

describe('configuration', () => {
  it('refuses a recovery grace that is not longer than the partner timeout (ConfigError)', () => {
    assert.throws(() => loadConfig({ PAYD_RECOVERY_GRACE_SECONDS: '5', PAYD_PARTNER_TIMEOUT_MS: '5000' }), ConfigError);
    assert.throws(() => loadConfig({ PAYD_RECOVERY_GRACE_SECONDS: '1', PAYD_PARTNER_TIMEOUT_MS: '2000' }), ConfigError);
    assert.equal(loadConfig({ PAYD_RECOVERY_GRACE_SECONDS: '5', PAYD_PARTNER_TIMEOUT_MS: '2000' }).recoveryGraceSeconds, 5);
    assert.throws(() => loadConfig({ PAYD_FAULT_KILL_AT: 'not a step' }), ConfigError);
  });
});

describe('recovery defects (in-process, PostgreSQL)', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    // A short partner timeout; the grace period is only used by the worker (not started here).
    t = await createTestApp({ partnerTimeoutMs: 1500, simInline: false, recoveryGraceSeconds: 1 });
    m = await t.createMerchant('Recovery defects');
  });
  after(() => t.close());

  const inject = (method: 'GET' | 'POST', url: string, payload?: unknown, key?: string) =>
    t.app.inject({ method, url, headers: { ...m.auth, ...(key ? { 'x-idempotency-key': key } : {}) }, ...(payload !== undefined ? { payload: payload as object } : {}) });
  const stored = (id: string) => t.app.services.payments.getStored(m.entityId, id);

  it('1. an authorization answered after recovery gave it up is reversed at the partner (no money left held)', async () => {
    const number = giftNumber();
    // The gift card exists at the partner; the partner receives the authorization but does
    // not act on it until told. (Not a row lock held on the card: the partner's wait for it
    // ends at lock_timeout, 2 s, which a loaded machine passes before recovery is done.)
    await t.testDb.db.query(`INSERT INTO sim_gift_cards (fingerprint, balance, currency) VALUES ($1, 50000, 'EUR')`, [giftId(number)]);
    const held = holdAuthorizations(t.app.services.partners.get('gift-sim') as PartnerConnector);
    try {
      const created = await inject('POST', '/v2/payments', { amount: 2500, currency: 'EUR', split: [gift(2500, number)] });
      assert.equal(created.statusCode, 200, created.body);
      assert.equal(created.json().authorization.status, 'PENDING', 'payd stopped waiting (partner timeout)');
      const id = created.json().id as string;
      // Recovery does not give the authorization up before its call's deadline has surely
      // passed; then it does (the partner's sync does not know the key yet).
      const p = await waitFor(async () => {
        await t.app.services.recovery.runOnce(0);
        const v = await stored(id);
        return v.authorization.status !== 'PENDING' && v;
      }, { what: 'recovery to close the authorization' });
      assert.equal(p.authorization.status, 'ERROR');
      assert.equal(p.authorization.partner_transactions[0]!.status_code, 'NOT_RECEIVED');
      // The partner now acts on the call that was in flight: it approves it.
      held.go();
      const reversed = await waitFor(async () => {
        const v = await stored(id);
        return v.voids[0]?.status === 'SUCCESS' && v;
      }, { what: 'the late approval to be reversed' });
      assert.equal(reversed.authorization.status, 'ERROR', 'the merchant was told ERROR; that stays');
      assert.equal(reversed.voids.length, 1);
      assert.equal(reversed.voids[0]!.triggered_by, 'SYSTEM');
      assert.equal(reversed.voids[0]!.amount, 2500);
      assert.equal(reversed.authorization.partner_transactions[0]!.status_code, 'ANSWERED_LATE');
      assert.equal(reversed.amounts.total_voided, 0, 'nothing was authorized in payd\'s totals');
      assert.equal(await giftBalance(t, number), 50000, 'the shopper\'s money is not held');
      const { rows } = await t.testDb.db.query<{ kind: string; status: string }>(
        `SELECT kind, status FROM sim_partner_operations WHERE partner = 'gift-sim' AND (key = $1 OR parent_ref = $2) ORDER BY kind`,
        [`${id}:1`, reversed.authorization.partner_transactions[0]!.partner_reference]);
      assert.deepEqual(rows, [{ kind: 'AUTHORIZATION', status: 'AUTHORIZED' }, { kind: 'VOID', status: 'SUCCEEDED' }]);
      // The event of the reversal was recorded.
      const ev = await t.testDb.db.query(`SELECT 1 FROM webhook_events WHERE type = 'payment.voided' AND data::text LIKE $1`, [`%${reversed.voids[0]!.id}%`]);
      assert.equal(ev.rows.length, 1);
    } finally {
      held.restore();
    }
  });

  it('1b. a late approval met by a database outage (a failover) is reversed once the database is back', async () => {
    const number = giftNumber();
    await t.testDb.db.query(`INSERT INTO sim_gift_cards (fingerprint, balance, currency) VALUES ($1, 50000, 'EUR')`, [giftId(number)]);
    // The app's database refuses every statement while down, as during a failover.
    const db = t.testDb.db as unknown as Record<'query' | 'transaction', (...args: unknown[]) => Promise<unknown>>;
    const original = { query: db.query, transaction: db.transaction };
    let down = false;
    let refused = 0;
    for (const name of ['query', 'transaction'] as const) {
      db[name] = (...args: unknown[]) => {
        if (!down) return original[name].apply(t.testDb.db, args);
        refused += 1;
        return Promise.reject(new DatabaseUnavailableError(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })));
      };
    }
    // The partner holds the authorization until told, then approves it; the database goes
    // down as its answer reaches payd.
    const held = holdAuthorizations(t.app.services.partners.get('gift-sim') as PartnerConnector, () => {
      down = true;
    });
    try {
      const created = await inject('POST', '/v2/payments', { amount: 2500, currency: 'EUR', split: [gift(2500, number)] });
      assert.equal(created.statusCode, 200, created.body);
      assert.equal(created.json().authorization.status, 'PENDING', 'payd stopped waiting (partner timeout)');
      const id = created.json().id as string;
      await waitFor(async () => {
        await t.app.services.recovery.runOnce(0);
        return (await stored(id)).authorization.status !== 'PENDING';
      }, { what: 'recovery to close the authorization' });
      assert.equal((await stored(id)).authorization.partner_transactions[0]!.status_code, 'NOT_RECEIVED');
      held.go();
      await waitFor(async () => refused > 0, { what: 'the late answer to meet the outage' });
      down = false;
      const reversed = await waitFor(async () => {
        const v = await stored(id);
        return v.voids[0]?.status === 'SUCCESS' && v;
      }, { what: 'the late approval to be reversed' });
      assert.equal(reversed.authorization.status, 'ERROR');
      assert.equal(reversed.authorization.partner_transactions[0]!.status_code, 'ANSWERED_LATE');
      assert.equal(reversed.voids[0]!.triggered_by, 'SYSTEM');
      assert.equal(await giftBalance(t, number), 50000, 'the shopper\'s money is not held');
    } finally {
      held.restore();
      down = false;
      Object.assign(db, original);
    }
  });

  it('3a. the simulator moves a balance only in the call that wins the key (two concurrent refunds, one credit)', async () => {
    const number = giftNumber();
    const created = await inject('POST', '/v2/payments', { amount: 2500, currency: 'EUR', split: [gift(2500, number)] });
    assert.equal(created.json().authorization.status, 'AUTHORIZED', created.body);
    const id = created.json().id as string;
    assert.equal((await inject('POST', `/v2/payments/${id}/captures`, { amount: 2500 })).statusCode, 200);
    assert.equal(await giftBalance(t, number), 47500);
    const authRef = (await stored(id)).authorization.partner_transactions[0]!.partner_reference as string;
    const sim = t.app.services.partners.get('gift-sim')!;
    // Both calls read "no such key", then wait on the authorization row held here.
    const lock = await lockRows(t.testDb.url!, `SELECT 1 FROM sim_partner_operations WHERE partner = 'gift-sim' AND reference = $1 FOR UPDATE`, [authRef]);
    const req = { key: `twice-${id}`, entityId: m.entityId, authorization_reference: authRef, amount: 1000, currency: 'EUR' };
    const both = Promise.all([sim.refund(req), sim.refund(req)]);
    await waitFor(async () => (await lockWaiters(t)) >= 2, { what: 'both refunds to wait on the authorization' });
    await lock.release();
    const [a, b] = await both;
    assert.equal(a.partner_reference, b.partner_reference, 'one operation at the partner');
    assert.equal(a.outcome, 'SUCCESS');
    assert.equal(await giftBalance(t, number), 48500, 'credited once');
  });

  it('3b. two recovery workers: one claims the payment, the refund is sent once', async () => {
    const number = giftNumber();
    const created = await inject('POST', '/v2/payments', { amount: 2500, currency: 'EUR', split: [gift(2500, number)] });
    const id = created.json().id as string;
    assert.equal((await inject('POST', `/v2/payments/${id}/captures`, { amount: 2500 })).statusCode, 200);
    const p = await stored(id);
    const auth = p.authorization.partner_transactions[0]!;
    // A refund recorded, then the process died before calling the partner (kill at
    // refund:after-reserve), long ago.
    const opId = randomUuid();
    await t.testDb.db.query(
      `INSERT INTO payment_operations (id, payment_id, kind, amount, status, triggered_by, created_at, updated_at)
       VALUES ($1, $2, 'REFUND', 1000, 'PENDING', 'MERCHANT', now() - interval '1 hour', now() - interval '1 hour')`, [opId, id]);
    await t.testDb.db.query(
      `INSERT INTO partner_transactions (id, payment_id, operation_id, parent_id, kind, seq, partner, method, amount, status, partner_key, created_at, updated_at)
       VALUES ($1, $2, $3, $4, 'REFUND', 10, 'gift-sim', 'GIFT_CARD', 1000, 'PENDING', $5, now() - interval '1 hour', now() - interval '1 hour')`,
      [randomUuid(), id, opId, auth.id, `${opId}:1`]);
    const sim = t.app.services.partners.get('gift-sim') as PartnerConnector;
    const original = sim.refund.bind(sim);
    let sent = 0;
    sim.refund = (req) => {
      sent += 1;
      return original(req);
    };
    const lock = await lockRows(t.testDb.url!, `SELECT 1 FROM sim_partner_operations WHERE partner = 'gift-sim' AND reference = $1 FOR UPDATE`, [auth.partner_reference]);
    try {
      const second = new Recovery(t.testDb.db, t.app.services.payments, 1);
      let done = 0;
      const runs = [t.app.services.recovery.runOnce(0), second.runOnce(0)].map((r) => r.finally(() => { done += 1; }));
      // One worker's resend waits on the partner; the other either skipped the claimed
      // payment (returned) or resent as well (a second waiter).
      await waitFor(async () => (await lockWaiters(t)) >= 1, { what: 'a worker to reach the partner' });
      await waitFor(async () => done >= 1 || (await lockWaiters(t)) >= 2, { what: 'the other worker to skip or to resend' });
      await lock.release();
      const counts = await Promise.all(runs);
      assert.equal(counts.reduce((s, n) => s + n, 0), 1, 'one worker settled the payment');
    } finally {
      sim.refund = original;
    }
    assert.equal(sent, 1, 'the refund was sent once');
    const after = await stored(id);
    assert.equal(after.refunds[0]!.status, 'SUCCESS');
    assert.equal(await giftBalance(t, number), 48500);
    const { rows } = await t.testDb.db.query('SELECT 1 FROM recovery_claims WHERE payment_id = $1', [id]);
    assert.equal(rows.length, 0, 'the claim was released');
  });

  it('4. a refund draws only on settled captures (split gift + card whose capture is PENDING)', async () => {
    const number = giftNumber();
    // 4000000000000416: captures time out at the acquirer (PENDING in payd for a while).
    const created = await inject('POST', '/v2/payments', { amount: 10_000, currency: 'EUR', split: [gift(2500, number), card(7500, '4000000000000416')] });
    assert.equal(created.json().authorization.status, 'AUTHORIZED', created.body);
    const id = created.json().id as string;
    const cap = await inject('POST', `/v2/payments/${id}/captures`, { amount: 3000 });
    assert.equal(cap.statusCode, 200, cap.body);
    const txs = cap.json().captures[0].partner_transactions as Array<{ method: string; amount: number; status: string }>;
    assert.deepEqual(txs.map((x) => [x.method, x.amount, x.status]), [['GIFT_CARD', 2500, 'SUCCESS'], ['CARD', 500, 'PENDING']]);
    const refund = await inject('POST', `/v2/payments/${id}/refunds`, { amount: 100 });
    assert.equal(refund.statusCode, 200, refund.body);
    const r = refund.json().refunds[0];
    assert.equal(r.status, 'SUCCESS', JSON.stringify(r));
    assert.deepEqual(r.partner_transactions.map((x: { method: string; amount: number }) => [x.method, x.amount]), [['GIFT_CARD', 100]]);
    assert.equal(await giftBalance(t, number), 50000 - 2500 + 100);
  });
});

describe('2. an operation whose partner answer was recorded but which was never finalized (real processes, PostgreSQL)', () => {
  let server: PaydProcess | undefined;
  let url: string;
  let db: PgDatabase;
  before(async () => {
    // Empty: the first process migrates it.
    db = await emptyPgDatabase(process.env.DATABASE_URL!, 'payd_rec_');
    url = db.url;
  });
  after(async () => {
    await server?.stop('SIGKILL');
    await db?.drop();
  });

  it('is finalized by recovery (status and event) after a kill between recording the answer and finalizing', async () => {
    // The kill comes at the named step after the partner's answer was recorded and before
    // the operation is finalized. (Holding the payment row from a second connection no
    // longer reaches that step: recording an answer updates the payment's running totals,
    // so it waits on the row too.)
    server = await startPayd({ DATABASE_URL: url, PAYD_FAULT_KILL_AT: 'capture:after-record', PAYD_SIM_INLINE: 'false', PAYD_PARTNER_TIMEOUT_MS: '20000', PAYD_RECOVERY_GRACE_SECONDS: '60' });
    const PORT = new URL(server.base).port;
    const m = await onboard(server.base);
    // A split: the capture draws on both parts, two partner transactions, so it takes the
    // general end (each answer recorded, then finalize). An operation with one partner
    // transaction records its answer and concludes in one statement: no step between.
    const created = await call(server.base, 'POST', '/v2/payments', m.auth, { amount: 5000, currency: 'EUR', split: [gift(2500, giftNumber()), card(2500)] });
    assert.equal(created.body!.authorization.status, 'AUTHORIZED', JSON.stringify(created.body));
    const id = created.body!.id as string;
    const q = new pg.Client({ connectionString: url });
    await q.connect();
    try {
      const lost = await call(server.base, 'POST', `/v2/payments/${id}/captures`, { ...m.auth, 'x-idempotency-key': 'cap-1' }, { amount: 5000 }).catch((e: Error) => e);
      assert.ok(lost instanceof Error, 'the response was lost');
      assert.equal(await server.stop('SIGKILL'), null, 'the process died at the fault point');
      const settled = await q.query(`SELECT 1 FROM partner_transactions WHERE payment_id = $1 AND kind = 'CAPTURE' AND status = 'SUCCESS'`, [id]);
      assert.equal(settled.rows.length, 2, 'the partner answers were recorded');
      const { rows } = await q.query<{ status: string; id: string }>(`SELECT id, status FROM payment_operations WHERE payment_id = $1`, [id]);
      assert.deepEqual(rows.map((r) => r.status), ['PENDING'], 'the crash left the operation PENDING with its child settled');
      const opId = rows[0]!.id;

      server = await startPayd({ DATABASE_URL: url, PORT, PAYD_RECOVERY_GRACE_SECONDS: '1', PAYD_PARTNER_TIMEOUT_MS: '500', PAYD_RECOVERY_INTERVAL_MS: '200' });
      const stored = { ...m.auth, 'cache-control': 'max-age=60' };
      const p = await waitFor(async () => {
        const v = (await call(server!.base, 'GET', `/v2/payments/${id}`, stored)).body!;
        return v.captures[0]?.status === 'SUCCESS' && v;
      }, { what: 'recovery to finalize the capture' });
      assert.equal(p.amounts.total_captured, 5000);
      const ev = await q.query(`SELECT 1 FROM webhook_events WHERE type = 'payment.captured' AND data::text LIKE $1`, [`%${opId}%`]);
      assert.equal(ev.rows.length, 1, 'its event was written');
      const replay = await call(server.base, 'POST', `/v2/payments/${id}/captures`, { ...m.auth, 'x-idempotency-key': 'cap-1' }, { amount: 5000 });
      assert.equal(replay.status, 409);
      assert.equal(replay.body!.resource_id, opId);
    } finally {
      await q.end();
    }
  });
});

function randomUuid(): string {
  return globalThis.crypto.randomUUID();
}
