// Kill storm (issue 13): real payd processes on PostgreSQL are killed (SIGKILL) at every
// named step of the write pipeline (src/platform/fault-points.ts) and at random moments,
// with one process and with two, for card, gift-card, BNPL and split payments, during
// authorizations, captures, refunds and voids; the merchant replays its key on the
// survivor. Then recovery runs (two workers at once) and, for every payment:
//   - nothing is left PENDING or processing, every operation is final with its event;
//   - payd's ledger equals the partners' own records, row by row (status and amount),
//     and no partner holds a record payd does not know (each key: one money movement);
//   - every gift card's balance equals what payd's ledger says was held and given back;
//   - no authorization is left held at a partner for a payment that is not AUTHORIZED;
//   - the running totals stored on each payment equal its ledger.
// Seeded: PAYD_FAULT_SEED (printed) replays a run; PAYD_FAULT_KILLS sets the number of
// kills (3 by default, so that the file fits the runner's 2-minute bound on a loaded
// machine; 200+ on demand, run without that bound:
//   PAYD_FAULT_KILLS=200 node --import tsx --test --test-timeout=0 test/faults/kill-storm.test.ts
// ). Uses its own database on the PostgreSQL server of DATABASE_URL, else the local one
// (always present on CI).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { freePort, onboard, startPayd, type PaydProcess } from '../helpers/processes.ts';
import { POSTGRES_URL } from '../helpers/db.ts';
import { storedTotalsDiffering } from '../helpers/invariants.ts';
import { seeded } from './db-fixture.ts';

const ADMIN_URL = POSTGRES_URL;
const SEED = Number(process.env.PAYD_FAULT_SEED || Math.floor(Math.random() * 2 ** 31));
const KILLS = Number(process.env.PAYD_FAULT_KILLS || 3);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const random = seeded(SEED);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;

type Instrument = 'card' | 'gift' | 'bnpl' | 'split' | 'slow-capture' | 'split-declined';
type Action = 'authorize' | 'capture' | 'refund' | 'void';
const STEPS = ['after-reserve', 'after-partner', 'after-record', 'after-finalize'] as const;
/** Every named kill point of src/platform/fault-points.ts. */
const NAMED_STEPS = [
  ...(['authorize', 'capture', 'refund', 'void'] as const).flatMap((a) => STEPS.map((s) => `${a}:${s}`)),
  'recovery:after-claim', 'recovery:after-partner', 'reversal:before-send',
];
const stepOffset = SEED % NAMED_STEPS.length;

let giftCounter = 0;
function paymentBody(kind: Instrument) {
  const gift = (amount: number) => {
    giftCounter += 1;
    const number = `6${String(SEED % 1_000_000).padStart(6, '0')}${String(giftCounter).padStart(7, '0')}42`; // 50000 at first
    return { partner: 'gift-sim', method: 'GIFT_CARD', amount, instrument: { type: 'GIFT_CARD', number, pin: '1234' } };
  };
  const card = (amount: number, number = '4242424242424242') => ({
    partner: 'card-sim', method: 'CARD', amount, instrument: { type: 'CARD', number, expiry_month: '12', expiry_year: '2030', cvv: '123' },
  });
  // slow-capture: a card whose captures time out (they stay PENDING until recovery syncs them).
  // split-declined: the gift card is authorized, the card declined: the gift card's hold is reversed.
  const split = kind === 'slow-capture' ? [card(5000, '4000000000000416')] : kind === 'card' ? [card(5000)] : kind === 'gift' ? [gift(2500)] : kind === 'bnpl'
    ? [{ partner: 'bnpl-sim', method: 'INSTALLMENTS_3X', amount: 6000 }] : kind === 'split-declined' ? [gift(2500), card(7500, '4000000000000002')]
      : [gift(2500), card(7500)];
  return { amount: split.reduce((s, p) => s + p.amount, 0), currency: 'EUR', customer: { email: 'storm@example.com' }, split };
}

interface Payd {
  server: PaydProcess;
  exited: Promise<void>;
  dead: () => boolean;
}

const PER_KILL_MS = 40_000;

describe(`kill storm (seed ${SEED}, ${KILLS} kills)`, () => {
  let dbName: string;
  let url: string;
  let port: number;
  let baseUrl: string;
  let auth: { authorization: string };
  let initial: Payd;
  const procs = new Set<Payd>();
  const pendingReplays: Array<{ path: string; body: unknown; key: string }> = [];
  /** Lost answers to replay on the next victim (one process at a time). */
  const carried: Array<{ path: string; body: unknown; key: string }> = [];
  const counts = {
    kills: 0, named: 0, reachedNamed: 0, notReached: 0, random: 0, oneProcess: 0, twoProcesses: 0,
    replays: {} as Record<string, number>, byStep: {} as Record<string, number>, reachedByStep: {} as Record<string, number>, setups: {} as Record<string, number>,
  };

  // Every process answers on its own port but shares one base URL, so that tokens are
  // valid on all of them (the issuer is the base URL).
  const common = () => ({
    DATABASE_URL: url, PAYD_BASE_URL: baseUrl, PAYD_SIM_INLINE: 'false', PAYD_SIM_LATENCY_MS: '100',
    PAYD_PARTNER_TIMEOUT_MS: '800', PAYD_RECOVERY_GRACE_SECONDS: '1', PAYD_DB_POOL_SIZE: '4', PAYD_RECOVERY_INTERVAL_MS: '250',
    PAYD_IDEMPOTENCY_HOLD_ATTEMPTS: '2', PAYD_IDEMPOTENCY_HOLD_INTERVAL_MS: '50', PAYD_WEBHOOK_POLL_MS: '60000', LOG_LEVEL: 'fatal',
  });

  async function start(env: Record<string, string> = {}): Promise<Payd> {
    const server = await startPayd({ ...common(), PORT: String(await freePort()), ...env });
    let isDead = server.child.exitCode !== null || server.child.signalCode !== null;
    const exited = new Promise<void>((resolve) => {
      if (isDead) resolve();
      server.child.once('exit', () => {
        isDead = true;
        resolve();
      });
    });
    const p: Payd = { server, exited, dead: () => isDead };
    procs.add(p);
    void exited.then(() => procs.delete(p));
    return p;
  }

  async function stop(p: Payd | undefined, signal: NodeJS.Signals = 'SIGTERM') {
    if (p && !p.dead()) await p.server.stop(signal);
  }

  async function send(p: Payd, method: string, path: string, body: unknown, key?: string) {
    const res = await fetch(p.server.base + path, {
      method, headers: { ...auth, 'content-type': 'application/json', ...(key ? { 'x-idempotency-key': key } : {}) }, body: JSON.stringify(body),
      signal: AbortSignal.timeout(20_000),
    });
    return { status: res.status, body: (await res.json().catch(() => undefined)) as Record<string, any> | undefined };
  }

  before(async () => {
    dbName = `payd_storm_${randomBytes(5).toString('hex')}`;
    const c = new pg.Client({ connectionString: ADMIN_URL });
    await c.connect();
    await c.query(`CREATE DATABASE ${dbName}`);
    await c.end();
    const u = new URL(ADMIN_URL);
    u.pathname = `/${dbName}`;
    url = u.toString();
    port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    initial = await start({ PORT: String(port) });
    ({ auth } = await onboard(initial.server.base));
    console.error(`# kill storm: PAYD_FAULT_SEED=${SEED} PAYD_FAULT_KILLS=${KILLS}`);
  });

  after(async () => {
    for (const p of [...procs]) await stop(p, 'SIGKILL');
    const c = new pg.Client({ connectionString: ADMIN_URL });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    await c.end();
  });

  interface Write { path: string; body: unknown; key: string }

  /** One write of a random kind on a payment set up for it (through process p); undefined when the setup failed. */
  async function prepare(p: Payd, i: number, n: number, action: Action, only?: Instrument): Promise<Write | undefined> {
    const instrument = only ?? pick<Instrument>(['card', 'gift', 'bnpl', 'split']);
    const key = `storm-${i}-${n}`;
    if (action === 'authorize') return { path: '/v2/payments', body: paymentBody(instrument), key };
    const created = await send(p, 'POST', '/v2/payments', paymentBody(instrument), `setup-${key}`).catch(() => undefined);
    const payment = created?.body;
    const setup = `${instrument}:${created?.status ?? 0}:${payment?.authorization?.status ?? payment?.title ?? ''}`;
    counts.setups[setup] = (counts.setups[setup] ?? 0) + 1;
    if (payment?.authorization?.status !== 'AUTHORIZED') return undefined;
    if (action === 'refund') await send(p, 'POST', `/v2/payments/${payment.id}/captures`, { amount: payment.amount }, `setup-capture-${key}`).catch(() => undefined);
    const path = `/v2/payments/${payment.id}/${action === 'capture' ? 'captures' : action === 'refund' ? 'refunds' : 'voids'}`;
    // A split's capture and refund draw on both its authorizations (neither part alone has
    // the amount): two partner calls, each answer recorded as it comes, then finalize.
    const amount = instrument === 'split' ? payment.amount - 500 : action === 'capture' ? 1000 : 500;
    return { path, body: action === 'void' ? {} : { amount }, key };
  }

  /** The merchant replays its keys (after losing the answers) on a process that runs. */
  async function replay(p: Payd, writes: Write[], mayDie = false) {
    for (const w of writes) {
      if (mayDie && p.dead()) return;
      const r = await send(p, 'POST', w.path, w.body, w.key).catch(() => ({ status: 0 }));
      counts.replays[r.status] = (counts.replays[r.status] ?? 0) + 1;
      assert.ok(r.status < 500, `the replay of ${w.key} answered ${r.status}`);
    }
  }

  /**
   * One kill: a victim process armed at a named step (the steps in turn), or, every third
   * kill, running three writes at once and killed at a random moment. Returns the writes
   * whose answers were lost, for the merchant to replay.
   */
  async function oneKill(i: number): Promise<Write[]> {
    const named = i % 3 !== 2 ? NAMED_STEPS[(stepOffset + counts.named) % NAMED_STEPS.length]! : undefined;
    const victim = await start(named ? { PAYD_FAULT_KILL_AT: named } : {});
    if (carried.length) await replay(victim, carried.splice(0), true);
    const actions: Action[] = named === 'reversal:before-send' ? ['authorize'] : named && !named.startsWith('recovery:') ? [named.split(':')[0] as Action]
      : named ? [pick<Action>(['authorize', 'capture', 'refund', 'void'])] : [0, 1, 2].map(() => pick<Action>(['authorize', 'capture', 'refund', 'void']));
    // Steps that only some writes pass: <kind>:after-record (a part recorded before the
    // next part's call, or an operation's answers recorded before finalize: splits, whose
    // captures and refunds draw on both parts; an operation with one partner transaction
    // records and concludes in one statement), reversal:before-send (a split whose card is declined) and
    // recovery:* (work for recovery: a capture that times out).
    const only: Instrument | undefined = named?.endsWith(':after-record') ? 'split'
      : named === 'reversal:before-send' ? 'split-declined'
        : named?.startsWith('recovery:') ? 'slow-capture' : undefined;
    if (only === 'slow-capture') actions.splice(0, actions.length, 'capture');
    const writes: Write[] = [];
    for (const [n, action] of actions.entries()) {
      if (victim.dead()) break;
      const w = await prepare(victim, i, n, action, only);
      if (w) writes.push(w);
    }
    const inFlight = Promise.all(writes.map((w) => (victim.dead() ? undefined : send(victim, 'POST', w.path, w.body, w.key).catch(() => undefined))));
    if (named) {
      counts.named += 1;
      counts.byStep[named] = (counts.byStep[named] ?? 0) + 1;
      // The step kills the process; if it is not on this write's path (or recovery found
      // nothing to claim), the write completes and the process is killed afterwards.
      await Promise.race([victim.exited, inFlight.then(() => sleep(named.startsWith('recovery:') ? 3000 : 300))]);
      if (victim.dead()) {
        counts.reachedNamed += 1;
        counts.reachedByStep[named] = (counts.reachedByStep[named] ?? 0) + 1;
      } else counts.notReached += 1;
    } else {
      counts.random += 1;
      await sleep(Math.floor(random() * 700));
    }
    await stop(victim, 'SIGKILL');
    await inFlight;
    counts.kills += 1;
    return writes;
  }

  it('kills one of two processes (the other recovers; replays on it)', { timeout: 60_000 + KILLS * PER_KILL_MS }, async () => {
    const survivor = initial; // started (and used to onboard) before
    for (let i = 0; i < Math.floor(KILLS / 2); i++) {
      counts.twoProcesses += 1;
      await replay(survivor, await oneKill(i));
    }
    await stop(survivor);
  });

  it('kills the only process (the next one recovers and takes the replays)', { timeout: 60_000 + KILLS * PER_KILL_MS }, async () => {
    // Each victim starts alone on what the last one left: its recovery worker settles
    // that, and the lost answers are replayed on it, until its own step kills it.
    for (let i = Math.floor(KILLS / 2); i < KILLS; i++) {
      counts.oneProcess += 1;
      pendingReplays.splice(0).forEach((w) => carried.push(w));
      pendingReplays.push(...(await oneKill(i)));
    }
  });

  it('settles everything exactly once: payd equals the partners, nothing held, nothing PENDING', { timeout: 240_000 }, async () => {
    // Two recovery workers at once; the last lost answers are replayed on one of them.
    const workers = await Promise.all([start(), start()]);
    await replay(workers[0]!, pendingReplays);
    const q = new pg.Client({ connectionString: url });
    await q.connect();
    try {
      const open = async () => (await q.query<{ n: number }>(
        `SELECT (SELECT count(*) FROM partner_transactions WHERE status = 'PENDING')
              + (SELECT count(*) FROM payment_operations WHERE status = 'PENDING')
              + (SELECT count(*) FROM payments WHERE processing OR authorization_status = 'PENDING') AS n`)).rows[0]!.n;
      const deadline = Date.now() + 90_000;
      while (Number(await open()) > 0 && Date.now() < deadline) await sleep(250);
      for (const w of workers) await stop(w);

      const one = async (sql: string) => (await q.query(sql)).rows;
      const stats = (await one(`SELECT (SELECT count(*) FROM payments)::int AS payments, (SELECT count(*) FROM payment_operations)::int AS operations,
        (SELECT count(*) FROM partner_transactions)::int AS ledger_rows, (SELECT count(*) FROM sim_partner_operations)::int AS partner_rows,
        (SELECT count(*) FROM sim_gift_cards)::int AS gift_cards,
        (SELECT count(*) FROM partner_transactions WHERE status_code = 'ANSWERED_LATE')::int AS late_reversals`))[0];
      console.error(`# kill storm counts: ${JSON.stringify({ seed: SEED, ...counts, ...stats })}`);

      // The running totals stored on each payment equal its ledger (they are what the
      // amounts checks read under lock, so a drift would allow an over-capture).
      assert.deepEqual(await storedTotalsDiffering({ query: async <T>(sql: string) => ({ rows: (await q.query(sql)).rows as T[], rowCount: 0 }) }), []);

      // Nothing PENDING after the grace period.
      assert.deepEqual(await one(`SELECT id, kind, status FROM partner_transactions WHERE status = 'PENDING'`), []);
      assert.deepEqual(await one(`SELECT id, kind, status FROM payment_operations WHERE status = 'PENDING'`), []);
      assert.deepEqual(await one(`SELECT id, authorization_status FROM payments WHERE processing OR authorization_status = 'PENDING'`), []);

      // Every operation is final with its event; every concluded authorization has its event.
      assert.deepEqual(await one(
        `SELECT o.id, o.kind, o.status FROM payment_operations o
          WHERE NOT EXISTS (SELECT 1 FROM webhook_events e WHERE e.data::text LIKE '%' || o.id || '%'
            AND e.type = 'payment.' || CASE WHEN o.status = 'SUCCESS' THEN CASE o.kind WHEN 'CAPTURE' THEN 'captured' WHEN 'REFUND' THEN 'refunded' ELSE 'voided' END
                                            ELSE lower(o.kind) || CASE o.status WHEN 'FAILURE' THEN '_failed' ELSE '_conflict' END END)`), []);
      assert.deepEqual(await one(
        `SELECT p.id, p.authorization_status FROM payments p
          WHERE NOT EXISTS (SELECT 1 FROM webhook_events e WHERE e.data::text LIKE '%' || p.id || '%'
            AND e.type = CASE p.authorization_status WHEN 'AUTHORIZED' THEN 'payment.authorized' WHEN 'REFUSED' THEN 'payment.refused' ELSE 'payment.failed' END)`), []);

      // payd's ledger equals the partners' records, row by row.
      assert.deepEqual(await one(
        `SELECT t.id, t.kind, t.status, t.status_code, t.amount, s.status AS partner_status, s.amount AS partner_amount
           FROM partner_transactions t LEFT JOIN sim_partner_operations s ON s.partner = t.partner AND s.key = t.partner_key
          WHERE NOT CASE
            WHEN t.status = 'AUTHORIZED' THEN s.status = 'AUTHORIZED' AND s.amount = t.amount
            WHEN t.status = 'SUCCESS' THEN s.status = 'SUCCEEDED' AND s.amount = t.amount
            WHEN t.status_code = 'ANSWERED_LATE' THEN s.status = 'AUTHORIZED' AND s.amount = t.amount
            ELSE s.key IS NULL OR s.status IN ('REFUSED', 'ERROR')
          END`), []);
      // ...and the partners hold nothing payd does not know: each key, one movement at most.
      assert.deepEqual(await one(
        `SELECT s.partner, s.key, s.kind, s.status FROM sim_partner_operations s
          WHERE NOT EXISTS (SELECT 1 FROM partner_transactions t WHERE t.partner = s.partner AND t.partner_key = s.key)`), []);
      // No authorization left held at a partner for a payment that is not AUTHORIZED.
      assert.deepEqual(await one(
        `SELECT p.id, p.authorization_status, s.partner, s.amount FROM sim_partner_operations s
           JOIN partner_transactions t ON t.partner = s.partner AND t.partner_key = s.key
           JOIN payments p ON p.id = t.payment_id
          WHERE s.kind = 'AUTHORIZATION' AND s.status = 'AUTHORIZED' AND p.authorization_status <> 'AUTHORIZED'
            AND s.amount > (SELECT coalesce(sum(v.amount), 0) FROM sim_partner_operations v
                             WHERE v.partner = s.partner AND v.parent_ref = s.reference AND v.kind = 'VOID' AND v.status = 'SUCCEEDED')`), []);
      // Gift-card balances: what payd's ledger says was held and given back, card by card.
      const balances = await one(
        `WITH auth AS (
           SELECT t.id, t.amount, s.data->>'card_id' AS card,
                  CASE WHEN t.status = 'AUTHORIZED' OR t.status_code = 'ANSWERED_LATE' THEN t.amount ELSE 0 END AS held
             FROM partner_transactions t JOIN sim_partner_operations s ON s.partner = t.partner AND s.key = t.partner_key
            WHERE t.kind = 'AUTHORIZATION' AND t.partner = 'gift-sim'),
         back AS (
           SELECT c.parent_id, sum(c.amount) AS amount FROM partner_transactions c
            WHERE c.partner = 'gift-sim' AND c.kind IN ('VOID', 'REFUND') AND c.status = 'SUCCESS' GROUP BY c.parent_id)
         SELECT g.fingerprint, g.balance::bigint AS balance,
                (50000 - coalesce(sum(a.held), 0) + coalesce(sum(b.amount), 0))::bigint AS expected
           FROM sim_gift_cards g LEFT JOIN auth a ON a.card = g.fingerprint LEFT JOIN back b ON b.parent_id = a.id
          GROUP BY g.fingerprint, g.balance`);
      const wrong = balances.filter((b) => Number(b.balance) !== Number(b.expected));
      console.error(`# kill storm balances checked: ${balances.length}, wrong: ${wrong.length}`);
      assert.deepEqual(wrong, []);
    } finally {
      await q.end();
    }
  });
});
