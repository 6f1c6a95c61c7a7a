// npm run test:ha (issue 24; not in the default CI, see docs/operations.md): payd on a real
// high-availability PostgreSQL. etcd, two PostgreSQL instances under Patroni (synchronous
// mode: a commit is acknowledged once the standby has it), two `payd start` processes whose
// DATABASE_URL names both hosts, and a load of create / capture / refund flows (each
// request retried while it answers 503, with its idempotency key). Mid-load the primary's
// host dies: SIGKILL of its Patroni and of its postmaster. Patroni promotes the standby
// once the leader key expires (ttl 8 s here). Checked afterwards, on the new primary:
// every 2xx payment and operation is there, each flow made one payment, the money
// invariants hold, no partner key was used twice, and writes resumed within 15 s of the
// kill. Prints the figures. Needs the Debian packages patroni and etcd-server, and runs
// PostgreSQL as the postgres user when started as root.
//   PAYD_HA_SECONDS (default 30): how long the load runs; the kill comes at a third.
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chownSync, mkdtempSync, openSync, realpathSync, rmSync, writeFileSync, existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createPgDb } from '../../src/platform/db/pg.ts';
import { moneyInvariants } from '../helpers/invariants.ts';
import { call, freePort, onboard, type ServerProcess, startServer } from '../helpers/server.ts';

const SECONDS = Number(process.env.PAYD_HA_SECONDS ?? 30);
const WORKERS = 12;
// The harness reports on stdout.
const log = (line: string) => process.stdout.write(`${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const card = { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2030', cvv: '123' };

const root = mkdtempSync(path.join(os.tmpdir(), 'payd-ha-'));
const asRoot = process.getuid?.() === 0;
const children: ChildProcess[] = [];
const servers: ServerProcess[] = [];

function bin(name: string): string {
  return execFileSync('sh', ['-c', `command -v ${name}`]).toString().trim();
}

/** A long-running program, its output in root/<name>.log. */
function daemon(name: string, program: string, args: string[], asPostgres = false): ChildProcess {
  const log = openSync(path.join(root, `${name}.log`), 'a');
  const [cmd, argv] = asPostgres && asRoot ? ['runuser', ['-u', 'postgres', '--', program, ...args]] : [program, args];
  const child = spawn(cmd, argv, { stdio: ['ignore', log, log], detached: true });
  children.push(child);
  return child;
}

async function cleanup() {
  await Promise.all(servers.map((s) => s.stop().catch(() => {})));
  for (const c of children) {
    try {
      process.kill(-c.pid!, 'SIGKILL');
    } catch { /* gone */ }
  }
  // Postmasters outlive a killed Patroni: stop them by their data directories.
  for (const n of ['node1', 'node2']) {
    const pidFile = path.join(root, n, 'postmaster.pid');
    if (existsSync(pidFile)) {
      try {
        process.kill(Number(readFileSync(pidFile, 'utf8').split('\n')[0]), 'SIGKILL');
      } catch { /* gone */ }
    }
  }
  await sleep(500);
  if (!process.env.PAYD_HA_KEEP) rmSync(root, { recursive: true, force: true });
}

async function patroniRole(restPort: number): Promise<string | undefined> {
  try {
    const res = await fetch(`http://127.0.0.1:${restPort}/patroni`);
    const body = (await res.json()) as { role?: string; state?: string };
    return body.state === 'running' ? body.role : undefined;
  } catch {
    return undefined;
  }
}

async function main() {
  if (asRoot) {
    const [uid, gid] = ['-u', '-g'].map((f) => Number(execFileSync('id', [f, 'postgres']).toString().trim()));
    chownSync(root, uid!, gid!);
  }
  const pgBin = path.dirname(realpathSync(bin('pg_ctl')));
  const [etcdClient, etcdPeer] = [await freePort(), await freePort()];
  daemon('etcd', bin('etcd'), [
    '--name', 'ha', '--data-dir', path.join(root, 'etcd'),
    '--listen-client-urls', `http://127.0.0.1:${etcdClient}`, '--advertise-client-urls', `http://127.0.0.1:${etcdClient}`,
    '--listen-peer-urls', `http://127.0.0.1:${etcdPeer}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${etcdPeer}`,
    '--initial-cluster', `ha=http://127.0.0.1:${etcdPeer}`,
  ]);
  const nodes = await Promise.all(['node1', 'node2'].map(async (name) => ({ name, pg: await freePort(), rest: await freePort(), patroni: undefined as ChildProcess | undefined })));
  for (const n of nodes) {
    const config = `scope: payd-ha
namespace: /payd/
name: ${n.name}
restapi:
  listen: 127.0.0.1:${n.rest}
  connect_address: 127.0.0.1:${n.rest}
etcd3:
  hosts: 127.0.0.1:${etcdClient}
bootstrap:
  dcs:
    ttl: 8
    loop_wait: 1
    retry_timeout: 3
    maximum_lag_on_failover: 1048576
    synchronous_mode: true
    postgresql:
      use_pg_rewind: false
      parameters:
        max_connections: 100
        wal_level: replica
        hot_standby: 'on'
        max_wal_senders: 10
        max_replication_slots: 10
        wal_keep_size: 128MB
  initdb:
  - encoding: UTF8
  pg_hba:
  - host replication all 127.0.0.1/32 trust
  - host all all 127.0.0.1/32 trust
  - local all all trust
postgresql:
  listen: 127.0.0.1:${n.pg}
  connect_address: 127.0.0.1:${n.pg}
  data_dir: ${path.join(root, n.name)}
  bin_dir: ${pgBin}
  pgpass: ${path.join(root, `${n.name}.pgpass`)}
  authentication:
    superuser:
      username: postgres
    replication:
      username: postgres
  parameters:
    unix_socket_directories: '${root}'
`;
    const file = path.join(root, `${n.name}.yml`);
    writeFileSync(file, config);
    if (asRoot) execFileSync('chown', ['postgres', file]);
  }
  // The first node bootstraps the cluster; the second then clones it.
  nodes[0]!.patroni = daemon(nodes[0]!.name, bin('patroni'), [path.join(root, 'node1.yml')], true);
  await until('node1 leads', async () => (await patroniRole(nodes[0]!.rest)) === 'master' || (await patroniRole(nodes[0]!.rest)) === 'primary', 90_000);
  nodes[1]!.patroni = daemon(nodes[1]!.name, bin('patroni'), [path.join(root, 'node2.yml')], true);
  await until('node2 is a synchronous standby', async () => {
    const res = await fetch(`http://127.0.0.1:${nodes[0]!.rest}/cluster`).then((r) => r.json()).catch(() => undefined) as { members?: Array<{ name: string; role: string; state: string }> } | undefined;
    return Boolean(res?.members?.some((m) => m.name === 'node2' && m.role === 'sync_standby' && (m.state === 'running' || m.state === 'streaming')));
  }, 90_000);

  const url = `postgres://postgres@127.0.0.1:${nodes[0]!.pg},127.0.0.1:${nodes[1]!.pg}/postgres`;
  // The standby also takes the reads that allow staleness (docs/operations.md, Read replicas).
  const env = { DATABASE_URL: url, DATABASE_READ_URL: `postgres://postgres@127.0.0.1:${nodes[1]!.pg}/postgres`, PAYD_SIM_INLINE: 'false', PAYD_RECOVERY_INTERVAL_MS: '500', PAYD_PARTNER_TIMEOUT_MS: '2000', PAYD_RECOVERY_GRACE_SECONDS: '3' };
  servers.push(await startServer(env));
  servers.push(await startServer({ ...env, PAYD_BASE_URL: servers[0]!.base }));
  const m = await onboard(servers[0]!.base);

  // The load: flows of create (MANUAL) -> capture in full -> refund half, on both processes.
  const okWrites: Array<{ at: number; kind: string; id: string; payment: string; amount: number }> = [];
  const statuses = new Map<string, number>();
  let killedAt = 0;
  let firstRefusalAt = 0;
  let resumedAt = 0;
  let stop = false;
  let flowNo = 0;
  const flows: Array<{ ref: string; payment?: string; done: boolean }> = [];
  const persist = async (base: string, pathName: string, key: string, body: unknown) => {
    for (;;) {
      const sentAt = Date.now();
      const res = await call(base, 'POST', pathName, { ...m.auth, 'x-idempotency-key': key }, body)
        .catch(() => ({ status: 0, headers: new Headers(), body: undefined }));
      const label = String(res.status);
      statuses.set(label, (statuses.get(label) ?? 0) + 1);
      if (res.status === 503 || res.status === 0) {
        if (killedAt) firstRefusalAt ||= Date.now();
        await sleep(killedAt ? 250 : 100);
        continue;
      }
      // The spec's replay answer: the first call got through and its answer was lost to
      // the failover; resource_id names what it created.
      // Writes resumed: the first answer to a request sent after the outage was seen.
      if (firstRefusalAt && sentAt > firstRefusalAt && (res.status === 200 || res.status === 409)) resumedAt ||= Date.now();
      if (res.status === 409 && res.body?.type === 'urn:eu.service:write-conflict') return { id: res.body.resource_id as string };
      assert.equal(res.status, 200, `${pathName}: ${res.status} ${JSON.stringify(res.body)}`);
      // An operation's answer is the payment; the header names the operation created.
      return { id: res.headers.get('x-created-operation-id') ?? (res.body!.id as string) };
    }
  };
  const worker = async (w: number) => {
    while (!stop) {
      const i = flowNo++;
      const base = servers[i % 2]!.base;
      const f: { ref: string; payment?: string; done: boolean } = { ref: `ha-${i}`, done: false };
      flows.push(f);
      const amount = 1000 + i;
      const p = await persist(base, '/v2/payments', `ha-pay-${i}`, {
        amount, currency: 'EUR', capture_mode: 'MANUAL', order: { reference: f.ref },
        split: [{ partner: 'card-sim', method: 'CARD', amount, instrument: card }],
      });
      f.payment = p.id as string;
      // Recovery settles an authorization whose creation met the failover.
      for (let n = 0; ; n++) {
        const got = await call(base, 'GET', `/v2/payments/${f.payment}`, m.auth).catch(() => undefined);
        if (got?.status === 200 && got.body!.authorization.status !== 'PENDING') {
          assert.equal(got.body!.authorization.status, 'AUTHORIZED', JSON.stringify(got.body));
          break;
        }
        assert.ok(n < 200, `payment ${f.payment} settled`);
        await sleep(200);
      }
      okWrites.push({ at: Date.now(), kind: 'payment', id: f.payment, payment: f.payment, amount });
      const c = await persist(base, `/v2/payments/${f.payment}/captures`, `ha-cap-${i}`, { amount });
      okWrites.push({ at: Date.now(), kind: 'capture', id: c.id as string, payment: f.payment, amount });
      const r = await persist(base, `/v2/payments/${f.payment}/refunds`, `ha-ref-${i}`, { amount: Math.floor(amount / 2) });
      okWrites.push({ at: Date.now(), kind: 'refund', id: r.id as string, payment: f.payment, amount: Math.floor(amount / 2) });
      f.done = true;
      void w;
    }
  };
  // Readers beside the writers: a payment with max-age=10 and the list, on both processes.
  const reads = { answers: new Map<string, number>(), okDuringOutage: 0 };
  const reader = async (r: number) => {
    for (let n = 0; !stop; n++) {
      const known = okWrites[okWrites.length - 1];
      const base = servers[(r + n) % 2]!.base;
      const res = n % 2 === 0 && known
        ? await call(base, 'GET', `/v2/payments/${known.payment}`, { ...m.auth, 'cache-control': 'max-age=10' }).catch(() => undefined)
        : await call(base, 'GET', '/v2/payments?limit=5', m.auth).catch(() => undefined);
      const label = String(res?.status ?? 0);
      reads.answers.set(label, (reads.answers.get(label) ?? 0) + 1);
      assert.ok(res && (res.status === 200 || res.status === 503), `a read answered ${label}: ${JSON.stringify(res?.body)}`);
      if (res.status === 200 && killedAt && !resumedAt) reads.okDuringOutage++;
      await sleep(50);
    }
  };
  const started = Date.now();
  const readers = Promise.all([reader(0), reader(1)]);
  readers.catch(() => {});
  const progress = setInterval(() => {
    log(`${((Date.now() - started) / 1000).toFixed(0)} s: ${okWrites.length} writes, answers ${JSON.stringify(Object.fromEntries(statuses))}`);
  }, 2000);
  const load = Promise.all(Array.from({ length: WORKERS }, (_, w) => worker(w)));
  load.catch(() => {}); // awaited below; a failure must not end the process before cleanup

  await sleep((SECONDS * 1000) / 3);
  // The primary's host dies: its Patroni first (no clean hand-over), then its postmaster.
  const leader = (await patroniRole(nodes[0]!.rest)) === 'master' || (await patroniRole(nodes[0]!.rest)) === 'primary' ? nodes[0]! : nodes[1]!;
  const other = leader === nodes[0] ? nodes[1]! : nodes[0]!;
  const postmaster = Number(readFileSync(path.join(root, leader.name, 'postmaster.pid'), 'utf8').split('\n')[0]);
  process.kill(-leader.patroni!.pid!, 'SIGKILL');
  process.kill(postmaster, 'SIGKILL');
  killedAt = Date.now();
  log(`killed ${leader.name} (Patroni and postmaster ${postmaster}) at ${((killedAt - started) / 1000).toFixed(1)} s`);
  await until(`${other.name} is promoted`, async () => ['master', 'primary'].includes((await patroniRole(other.rest)) ?? ''), 60_000);
  const promotedAt = Date.now();
  await sleep(Math.max(0, started + SECONDS * 1000 - Date.now()));
  stop = true;
  await load;
  await readers;
  const replicaReads = async (base: string) => Number(/^payd_db_reads_total\{source="replica",reason="fresh"\} (\d+)/m.exec(await (await fetch(`${base}/metrics`)).text())?.[1] ?? 0);
  const fromReplica = (await replicaReads(servers[0]!.base)) + (await replicaReads(servers[1]!.base));
  clearInterval(progress);

  const resumeMs = resumedAt ? resumedAt - killedAt : Infinity;
  const newPrimary = createPgDb(`postgres://postgres@127.0.0.1:${other.pg}/postgres`, 2);
  try {
    const ids = (kind: string) => okWrites.filter((w) => w.kind === kind).map((w) => w.id);
    const present = async (sql: string, list: string[]) => (await newPrimary.query<{ n: number }>(sql, [list])).rows[0]!.n;
    const payments = ids('payment');
    const operations = [...ids('capture'), ...ids('refund')];
    assert.equal(await present('SELECT count(*)::int AS n FROM payments WHERE id = ANY($1::uuid[])', payments), payments.length, 'every 2xx payment is on the new primary');
    assert.equal(await present('SELECT count(*)::int AS n FROM payment_operations WHERE id = ANY($1::uuid[])', operations), operations.length, 'every 2xx capture and refund is on the new primary');
    const doubled = await newPrimary.query<{ order_reference: string }>(
      'SELECT order_reference FROM payments WHERE entity_id = $1 GROUP BY 1 HAVING count(*) > 1', [m.entityId]);
    assert.deepEqual(doubled.rows, [], 'no flow made two payments');
    const reused = await newPrimary.query('SELECT partner, partner_key FROM partner_transactions WHERE partner_key IS NOT NULL GROUP BY 1, 2 HAVING count(*) > 1');
    assert.deepEqual(reused.rows, [], 'no partner key used twice');
    // Let recovery settle what was in flight at the kill, then the invariants.
    let report = await moneyInvariants(newPrimary);
    for (let i = 0; i < 40 && report.pending > 0; i++) {
      await sleep(500);
      report = await moneyInvariants(newPrimary);
    }
    assert.deepEqual(report.violations, [], 'money invariants');
    assert.equal(report.pending, 0, 'nothing left PENDING');
    const summary = {
      seconds: SECONDS, flows: flows.length, flows_completed: flows.filter((f) => f.done).length,
      writes_2xx: okWrites.length, answers: Object.fromEntries(statuses),
      first_503_after_ms: firstRefusalAt - killedAt, promoted_after_ms: promotedAt - killedAt,
      writes_resumed_after_ms: resumeMs, resumed_after_promotion_ms: resumedAt - promotedAt,
      reads: Object.fromEntries(reads.answers), reads_served_by_the_replica: fromReplica, reads_200_while_writes_were_down: reads.okDuringOutage,
    };
    log(JSON.stringify(summary, null, 2));
    assert.ok(resumeMs <= 15_000, `writes resumed ${resumeMs} ms after the kill (limit 15 s)`);
    log('HA failover: PASS');
  } finally {
    await newPrimary.close();
  }
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what} (logs in ${root}; PAYD_HA_KEEP=1 keeps them)`);
    await sleep(250);
  }
}

main().then(cleanup, async (err) => {
  console.error(err);
  process.env.PAYD_HA_KEEP = '1';
  await cleanup();
  console.error(`HA failover: FAIL (logs kept in ${root})`);
  process.exit(1);
});
