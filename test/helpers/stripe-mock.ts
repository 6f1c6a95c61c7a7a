// stripe-stateful-mock (npm, a stateful Stripe API sandbox) in a child process on a free
// local port, for the Stripe connector's tests over real HTTP.
import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { freePort } from './processes.ts';
import { poll } from './wait.ts';

export interface StripeMock {
  url: string;
  stop(): Promise<void>;
}

export async function startStripeMock(): Promise<StripeMock> {
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, [path.resolve('node_modules/stripe-stateful-mock/dist/cli.js')], {
    stdio: 'ignore', env: { ...process.env, PORT: String(port), LOG_LEVEL: 'error' },
  });
  const url = `http://127.0.0.1:${port}`;
  const state = await poll(async () => {
    try {
      // Any HTTP answer means it listens (unauthenticated calls are 401).
      await fetch(`${url}/v1/charges`);
      return 'listening';
    } catch {
      return child.exitCode !== null ? 'exited' : 'starting';
    }
  }, (s) => s !== 'starting', { withinMs: 20_000, everyMs: 100 });
  if (state !== 'listening') throw new Error('stripe-stateful-mock did not start');
  return {
    url,
    stop: () => new Promise<void>((resolve) => {
      if (child.exitCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    }),
  };
}
