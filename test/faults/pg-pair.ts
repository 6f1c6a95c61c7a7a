// A PostgreSQL primary and a streaming standby of it on local ports, made for one test
// (initdb, pg_basebackup -R), with synchronous replication: a commit the primary
// acknowledged is on the standby. As root, the server programs run as the postgres user
// (PostgreSQL refuses root). Kill the primary's postmaster, promote the standby: a
// failover without a cluster manager, the part of Patroni's work payd must survive.
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync, appendFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../helpers/processes.ts';

/** The directory of PostgreSQL's server programs (the one pg_ctl on PATH belongs to). */
function binDir(): string {
  const onPath = execFileSync('sh', ['-c', 'command -v pg_ctl']).toString().trim();
  return path.dirname(realpathSync(onPath));
}

export interface PgNode {
  port: number;
  dir: string;
  url(database?: string): string;
  /** The postmaster's pid (first line of postmaster.pid). */
  pid(): number;
}

export interface PgPair {
  primary: PgNode;
  standby: PgNode;
  /** Promotes the standby to primary and waits until it takes writes. */
  promote(): void;
  /** Stops the standby, the primary first made asynchronous (else its commits would wait for the standby forever). */
  stopStandby(): void;
  /** Stops whatever still runs and removes the directories. */
  close(): void;
}

export async function startPgPair(): Promise<PgPair> {
  const bin = binDir();
  const root = mkdtempSync(path.join(os.tmpdir(), 'payd-pg-pair-'));
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    chownSync(root, uid, gid);
  }
  const run = (program: string, args: string[]) =>
    asRoot
      ? execFileSync('runuser', ['-u', 'postgres', '--', path.join(bin, program), ...args], { stdio: 'pipe' })
      : execFileSync(path.join(bin, program), args, { stdio: 'pipe' });
  const node = (name: string, port: number): PgNode => {
    const dir = path.join(root, name);
    return {
      port, dir,
      url: (database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`,
      pid: () => Number(readFileSync(path.join(dir, 'postmaster.pid'), 'utf8').split('\n')[0]),
    };
  };
  const primary = node('a', await freePort());
  const standby = node('b', await freePort());
  const start = (n: PgNode) => run('pg_ctl', ['-D', n.dir, '-l', path.join(root, `${path.basename(n.dir)}.log`), '-w', '-t', '60', 'start']);
  const stopNode = (n: PgNode) => {
    if (existsSync(path.join(n.dir, 'postmaster.pid'))) {
      try {
        run('pg_ctl', ['-D', n.dir, '-m', 'immediate', '-w', 'stop']);
      } catch { /* already gone */ }
    }
  };

  run('initdb', ['-D', primary.dir, '-U', 'postgres', '-A', 'trust', '--no-sync']);
  appendFileSync(path.join(primary.dir, 'postgresql.conf'), [
    `port = ${primary.port}`, "listen_addresses = '127.0.0.1'", `unix_socket_directories = '${root}'`,
    'wal_level = replica', 'max_wal_senders = 5', 'hot_standby = on', 'fsync = off', 'full_page_writes = off',
    "synchronous_standby_names = '*'", 'max_connections = 60', 'shared_buffers = 32MB',
  ].join('\n') + '\n');
  start(primary);
  run('pg_basebackup', ['-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres', '-D', standby.dir, '-R', '-X', 'stream', '--no-sync']);
  const conf = path.join(standby.dir, 'postgresql.conf');
  writeFileSync(conf, readFileSync(conf, 'utf8').replace(`port = ${primary.port}`, `port = ${standby.port}`));
  start(standby);
  // Wait until the standby streams synchronously (commits wait for it from then on).
  for (let i = 0; ; i++) {
    const state = run('psql', ['-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres', '-Atc', 'SELECT sync_state FROM pg_stat_replication']).toString().trim();
    if (state === 'sync') break;
    if (i > 100) throw new Error(`the standby does not stream synchronously (${state || 'not connected'})`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    primary, standby,
    promote() {
      // A promoted standby without its synchronous partner would wait on every commit.
      run('psql', ['-h', '127.0.0.1', '-p', String(standby.port), '-U', 'postgres', '-c', "ALTER SYSTEM SET synchronous_standby_names = ''"]);
      run('pg_ctl', ['-D', standby.dir, '-w', '-t', '60', 'promote']);
      run('psql', ['-h', '127.0.0.1', '-p', String(standby.port), '-U', 'postgres', '-c', 'SELECT pg_reload_conf()']);
    },
    stopStandby() {
      run('psql', ['-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres', '-c', "ALTER SYSTEM SET synchronous_standby_names = ''"]);
      run('psql', ['-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres', '-c', 'SELECT pg_reload_conf()']);
      stopNode(standby);
    },
    close() {
      stopNode(standby);
      stopNode(primary);
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** SIGKILL of a postmaster (its backends then exit too), as when the host dies. */
export function killPostmaster(n: PgNode): void {
  process.kill(n.pid(), 'SIGKILL');
}
