// Real payd server processes for tests that need them (several processes, crashes).
import { type ChildProcess, spawn } from 'node:child_process';
import net from 'node:net';
import { randomBytes } from 'node:crypto';
import { ADMIN_TOKEN } from './app.ts';

export interface ServerProcess {
  base: string;
  child: ChildProcess;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

export const SERVER_MASTER_KEY = randomBytes(32).toString('base64');

/** Starts `node bin/payd.js start` and waits until /readyz answers 200 (env.PORT keeps a port, and so the token issuer, across restarts). */
export async function startServer(env: Record<string, string>, opts: { logs?: string[] } = {}): Promise<ServerProcess> {
  const port = env.PORT ? Number(env.PORT) : await freePort();
  const base = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, ['bin/payd.js', 'start'], {
    env: {
      PATH: process.env.PATH ?? '', PORT: String(port), HOST: '127.0.0.1', PAYD_BASE_URL: base, PAYD_ADMIN_TOKEN: ADMIN_TOKEN,
      PAYD_MASTER_KEY: SERVER_MASTER_KEY, PAYD_DEMO: '0', LOG_LEVEL: 'warn', ...env,
    },
    stdio: ['ignore', opts.logs ? 'pipe' : 'ignore', 'inherit'],
  });
  // opts.logs: the server's log lines (stdout), as they come.
  if (opts.logs && child.stdout) {
    let rest = '';
    child.stdout.on('data', (d: Buffer) => {
      const lines = (rest + d.toString()).split('\n');
      rest = lines.pop()!;
      opts.logs!.push(...lines);
    });
  }
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  // Generous: a first start on the embedded database migrates it, which takes a minute or
  // more on a machine running several test suites at once.
  const deadline = Date.now() + 180_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`payd exited with ${child.exitCode} before it was ready`);
    try {
      if ((await fetch(`${base}/readyz`)).status === 200) break;
    } catch { /* not listening yet */ }
    if (Date.now() > deadline) {
      child.kill('SIGKILL'); // never leave a server behind (it would outlive its data directory)
      await exited;
      throw new Error('payd did not become ready in 180 s');
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    base,
    child,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** HTTP helper: JSON in, {status, headers, body} out. */
export async function call(base: string, method: string, path: string, headers: Record<string, string> = {}, body?: unknown) {
  const res = await fetch(base + path, {
    method,
    headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? (JSON.parse(text) as Record<string, any>) : undefined };
}

/** Creates an entity and API key through the operator API and returns a bearer header. */
export async function onboard(base: string): Promise<{ entityId: string; auth: { authorization: string } }> {
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
  const e = await call(base, 'POST', '/admin/v1/entities', admin, { name: 'Process test' });
  const k = await call(base, 'POST', `/admin/v1/entities/${e.body!.id}/api-keys`, admin);
  const res = await fetch(`${base}/oauth/token`, {
    method: 'POST',
    headers: { 'x-api-key': k.body!.api_key, 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials',
  });
  const token = ((await res.json()) as { access_token: string }).access_token;
  return { entityId: e.body!.id, auth: { authorization: `Bearer ${token}` } };
}
