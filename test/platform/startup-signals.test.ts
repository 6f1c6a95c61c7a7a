// A supervisor stops payd with SIGTERM sent to the process it started. Whether that is
// `npm start`, a shell that npm or npx put in between, or payd itself, the server must
// stop gracefully (its "stopped" log line) and nothing may stay behind holding the port
// or the output pipes. Each command runs in its own process group, which the test kills
// afterwards whatever happened.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort, SERVER_MASTER_KEY } from '../helpers/processes.ts';
import { waitFor } from '../helpers/wait.ts';

const BOUND_MS = 60_000;

interface Launched {
  child: ChildProcess;
  output(): string;
  /** Resolves when every process holding the output pipes has gone. */
  pipesClosed: Promise<void>;
  exited: Promise<number | null>;
}

function launch(command: string, args: string[], env: Record<string, string>): Launched {
  const child = spawn(command, args, {
    detached: true, // its own process group
    // npm needs its own environment (HOME, PATH); the server always runs on PGlite here,
    // never on the DATABASE_URL the test run was given.
    env: { ...process.env, DATABASE_URL: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => { out += d.toString(); });
  child.stderr!.on('data', (d: Buffer) => { out += d.toString(); });
  const pipesClosed = Promise.all([
    new Promise<void>((resolve) => child.stdout!.once('close', () => resolve())),
    new Promise<void>((resolve) => child.stderr!.once('close', () => resolve())),
  ]).then(() => {});
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => out, pipesClosed, exited };
}

async function within<T>(p: Promise<T>, what: string, output: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_, reject) => {
    // Bounds the wait, not a sleep.
    timer = setTimeout(() => reject(new Error(`${what} did not happen within ${BOUND_MS} ms; output:\n${output()}`)), BOUND_MS);
  });
  try {
    return await Promise.race([p, bound]);
  } finally {
    clearTimeout(timer);
  }
}

async function ready(base: string, l: Launched): Promise<void> {
  const deadline = Date.now() + BOUND_MS;
  await waitFor(async () => {
    if (l.child.exitCode !== null) throw new Error(`exited before ready:\n${l.output()}`);
    try {
      if ((await fetch(`${base}/readyz`)).status === 200) return true;
    } catch { /* not listening yet */ }
    if (Date.now() > deadline) throw new Error(`not ready in time:\n${l.output()}`);
    return false;
  }, { timeout: BOUND_MS + 10_000, every: 100, what: 'ready' });
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => { s.destroy(); resolve(true); });
    s.once('error', () => resolve(false));
  });
}

function killGroup(l: Launched): void {
  try {
    process.kill(-l.child.pid!, 'SIGKILL');
  } catch { /* already gone */ }
}

describe('stopping payd with a signal', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'payd-signals-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const envFor = (port: number): Record<string, string> => ({
    PORT: String(port), HOST: '127.0.0.1', PAYD_BASE_URL: `http://127.0.0.1:${port}`, PAYD_DATA_DIR: path.join(dir, 'data'), // one data dir, used in turn
    PAYD_MASTER_KEY: SERVER_MASTER_KEY, PAYD_DEMO: '0', LOG_LEVEL: 'info',
  });

  async function scenario(command: string, args: string[], signal: NodeJS.Signals, extraEnv: Record<string, string> = {}) {
    const port = await freePort();
    const l = launch(command, args, { ...envFor(port), ...extraEnv });
    try {
      await ready(`http://127.0.0.1:${port}`, l);
      l.child.kill(signal); // the process the supervisor started, not its group
      const code = await within(l.exited, 'the launched process exiting', l.output);
      await within(l.pipesClosed, 'every process of the command ending (output pipes closed)', l.output);
      assert.equal(await accepts(port), false, 'nothing listens on the port any more');
      assert.match(l.output(), new RegExp(`"signal":"(${signal}|parent exited)".*"msg":"shutting down`));
      assert.match(l.output(), /"msg":"stopped"/, 'payd stopped gracefully');
      return code;
    } finally {
      killGroup(l);
    }
  }

  it('npm start: SIGTERM to npm stops the server gracefully, no orphan', async () => {
    const code = await scenario('npm', ['start', '--silent'], 'SIGTERM');
    assert.equal(code, 0);
  });

  it('a shell between npm and payd (npx, a script without exec): payd stops when the shell is gone', async () => {
    // `; true` keeps sh from replacing itself with node: sh is the parent that dies.
    await scenario('sh', ['-c', 'node bin/payd.js start; true'], 'SIGTERM', { npm_command: 'exec' });
  });

  it('a shell gone while payd is still starting: payd stops once started, no orphan', async () => {
    // The parent payd watches is the one that started it: read when start-up had finished,
    // it was already the process payd had been re-parented to, and payd lived on.
    const port = await freePort();
    const l = launch('sh', ['-c', 'node bin/payd.js start; true'], { ...envFor(port), npm_command: 'exec' });
    try {
      // payd's first line comes before it opens its database, seconds before it listens.
      await waitFor(() => /running on the embedded database/.test(l.output()), { timeout: BOUND_MS, what: 'payd starting' });
      l.child.kill('SIGTERM');
      await within(l.exited, 'the shell exiting', l.output);
      await within(l.pipesClosed, 'every process of the command ending (output pipes closed)', l.output);
      assert.equal(await accepts(port), false, 'nothing listens on the port');
      assert.match(l.output(), /"signal":"parent exited".*"msg":"shutting down/);
    } finally {
      killGroup(l);
    }
  });
});
