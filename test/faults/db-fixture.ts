// Shared by the database fault scenarios (test/faults/db-*.test.ts): a PostgreSQL test
// database even when DATABASE_URL is unset (PostgreSQL is always present on CI and dev
// machines; the scenarios need a server payd processes can lose), a load of captures,
// process probes (/proc) and the money invariants checked on the ledger.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { createTestDb, POSTGRES_URL, type TestDb } from '../helpers/db.ts';
import { storedTotalsDiffering } from '../helpers/invariants.ts';
import { call } from '../helpers/server.ts';

export async function createPgTestDb(): Promise<TestDb & { url: string; name: string }> {
  const t = await createTestDb(POSTGRES_URL);
  const url = t.url!;
  return { ...t, url, name: new URL(url).pathname.slice(1) };
}

/** Deterministic pseudo-random numbers in [0, 1) (mulberry32). */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function envInt(name: string, fallback: number): number {
  const n = Number(process.env[name]);
  return Number.isFinite(n) && n > 0 ? n : fallback;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Open file descriptors and resident memory of a process (Linux /proc); zeros once it is gone. */
export function probe(pid: number): { fds: number; rssMb: number } {
  try {
    const fds = readdirSync(`/proc/${pid}/fd`).length;
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return { fds, rssMb: m ? Math.round(Number(m[1]) / 1024) : 0 };
  } catch {
    return { fds: 0, rssMb: 0 };
  }
}

/** Waits for a state; fails at once if the payd process exited, or after timeoutMs. */
export async function until(child: ChildProcess, what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    assert.equal(child.exitCode ?? child.signalCode, null, `payd exited while waiting for ${what}`);
    assert.ok(Date.now() < deadline, `timed out waiting for ${what}`);
    await sleep(50);
  }
}

const card = { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2030', cvv: '123' };
export const paymentBody = (amount: number) => ({ amount, currency: 'EUR', split: [{ partner: 'card-sim', method: 'CARD', amount, instrument: card }] });

export type Answer = { status: number; retryAfter: string | null; type: string | undefined; contentType: string | null } | { status: 0; error: string };

/** One HTTP call that never throws: status 0 when the connection itself failed. */
export async function attempt(base: string, method: string, path: string, headers: Record<string, string>, body?: unknown): Promise<Answer & { body?: Record<string, any> }> {
  try {
    const r = await call(base, method, path, headers, body);
    return { status: r.status, retryAfter: r.headers.get('retry-after'), type: r.body?.type, contentType: r.headers.get('content-type'), body: r.body };
  } catch (err) {
    return { status: 0, error: String((err as Error).cause ?? err) };
  }
}

/** A 503 as the spec wants it during an outage: problem+json with Retry-After. */
export function assertUnavailable(a: Answer): void {
  assert.equal(a.status, 503);
  if (a.status !== 503) return;
  assert.match(a.contentType ?? '', /^application\/problem\+json/);
  assert.match(a.retryAfter ?? '', /^\d+$/, 'Retry-After in seconds');
}

/**
 * Captures the client was told succeeded (200), by payment: the ledger must hold at least
 * these, whatever happened to the database afterwards.
 */
export type Acknowledged = Map<string, number>;

export interface Invariants {
  payments: number;
  captured: number;
}

/**
 * Waits until no partner transaction is PENDING (recovery settles those a fault left),
 * then checks every payment of the database: captured + voided <= authorized, refunded
 * <= captured (per authorization too), each SUCCESS operation equals its ledger rows, the
 * API amounts equal the ledger, and every capture acknowledged to the client is there.
 */
export async function checkInvariants(t: TestDb, base: string, auth: Record<string, string>, acknowledged: Acknowledged): Promise<Invariants> {
  for (let i = 0; ; i++) {
    const { rows } = await t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM partner_transactions WHERE status = 'PENDING'`);
    if (rows[0]!.n === 0) break;
    assert.ok(i < 300, `${rows[0]!.n} partner transactions still PENDING after 60 s of recovery`);
    await sleep(200);
  }
  const { rows: txs } = await t.db.query<{ id: string; payment_id: string; operation_id: string | null; parent_id: string | null; kind: string; status: string; amount: number }>(
    'SELECT id, payment_id, operation_id, parent_id, kind, status, amount FROM partner_transactions',
  );
  const { rows: ops } = await t.db.query<{ id: string; payment_id: string; status: string; amount: number }>('SELECT id, payment_id, status, amount FROM payment_operations');
  const { rows: payments } = await t.db.query<{ id: string }>('SELECT id FROM payments');
  const sum = (rows: typeof txs, kind: string, status: string) => rows.filter((x) => x.kind === kind && x.status === status).reduce((s, x) => s + x.amount, 0);
  let captured = 0;
  for (const p of payments) {
    const mine = txs.filter((x) => x.payment_id === p.id);
    const ledger = {
      total_authorized: sum(mine, 'AUTHORIZATION', 'AUTHORIZED'),
      total_captured: sum(mine, 'CAPTURE', 'SUCCESS'),
      total_voided: sum(mine, 'VOID', 'SUCCESS'),
      total_refunded: sum(mine, 'REFUND', 'SUCCESS'),
    };
    captured += ledger.total_captured;
    assert.ok(ledger.total_captured + ledger.total_voided <= ledger.total_authorized, `payment ${p.id}: ${JSON.stringify(ledger)}`);
    assert.ok(ledger.total_refunded <= ledger.total_captured, `payment ${p.id}: ${JSON.stringify(ledger)}`);
    for (const a of mine.filter((x) => x.kind === 'AUTHORIZATION' && x.status === 'AUTHORIZED')) {
      const children = mine.filter((x) => x.parent_id === a.id && x.status === 'SUCCESS' && (x.kind === 'CAPTURE' || x.kind === 'VOID'));
      assert.ok(children.reduce((s, x) => s + x.amount, 0) <= a.amount, `authorization ${a.id} over-drawn`);
    }
    for (const op of ops.filter((o) => o.payment_id === p.id && o.status === 'SUCCESS')) {
      const drawn = mine.filter((x) => x.operation_id === op.id && x.status === 'SUCCESS').reduce((s, x) => s + x.amount, 0);
      assert.equal(drawn, op.amount, `operation ${op.id}: ledger ${drawn}, operation ${op.amount}`);
    }
    assert.ok(ledger.total_captured >= (acknowledged.get(p.id) ?? 0), `payment ${p.id}: acknowledged ${acknowledged.get(p.id)}, ledger ${ledger.total_captured}`);
    const api = await call(base, 'GET', `/v2/payments/${p.id}`, { ...auth, 'cache-control': 'max-age=0' });
    assert.equal(api.status, 200);
    for (const [k, v] of Object.entries(ledger)) assert.equal(api.body!.amounts[k], v, `payment ${p.id}: API ${k}`);
  }
  assert.deepEqual(await storedTotalsDiffering(t.db), [], 'the running totals stored on each payment equal its ledger');
  return { payments: payments.length, captured };
}
