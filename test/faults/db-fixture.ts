// Shared by the database fault scenarios (test/faults/db-*.test.ts): a PostgreSQL test
// database even when DATABASE_URL is unset (PostgreSQL is always present on CI and dev
// machines; the scenarios need a server payd processes can lose), a load of captures,
// and process probes (/proc). The money invariants they check afterwards:
// checkInvariants in ../helpers/invariants.ts.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { createTestDb, POSTGRES_URL, type TestDb } from '../helpers/db.ts';
import { call } from '../helpers/processes.ts';

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
