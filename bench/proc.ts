// What the benches read of the processes they start (Linux /proc), shared by
// bench/throughput.ts and bench/startup.ts. Where /proc cannot be read (another system,
// a process already gone) the figures are NaN, never 0, so that a missing reading cannot
// pass for a cheap one.
import { readFileSync } from 'node:fs';
import net from 'node:net';

/** A TCP port free on 127.0.0.1 at the time of the call. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer().once('error', reject).listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** CPU time the process has used so far, in ms, user and system (ticks of 10 ms: USER_HZ 100). */
export function cpuMs(pid: number | undefined): { user: number; sys: number } {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return { user: Number(fields[11]) * 10, sys: Number(fields[12]) * 10 };
  } catch {
    return { user: Number.NaN, sys: Number.NaN };
  }
}

/** The process's CPU time (ms), user and system together. */
export function cpuTotalMs(pid: number | undefined): number {
  const { user, sys } = cpuMs(pid);
  return user + sys;
}

/** The process's resident set size now, in MB. */
export function rssMb(pid: number | undefined): number {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? Number.NaN) / 1024;
  } catch {
    return Number.NaN;
  }
}

/**
 * The environment every bench gives `bin/payd.js`: PAYD_FROM_SOURCES=0, so that a checkout
 * whose src/ is newer than dist/ fails to start (npm run build) instead of being timed
 * running its sources through tsx, which starts slower and holds more memory.
 */
export const COMPILED_ONLY = { PAYD_FROM_SOURCES: '0' } as const;
