// One process at a time on an embedded database (PGlite is a single-process PostgreSQL:
// two processes writing the same data directory lose writes, as `payd keys rotate` next
// to a running `payd start` did). Opening it takes `payd.lock` in the directory, with the
// process id; a lock whose process is gone is taken over. Another live process's lock is
// refused with one line naming it and what to do instead.
import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import path from 'node:path';

export class EmbeddedDbBusyError extends Error {
  override name = 'EmbeddedDbBusyError';
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** Takes the data directory for this process; the returned function gives it back. */
export function lockEmbedded(dir: string): () => void {
  const file = path.join(dir, 'payd.lock');
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(file, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return () => {
        try {
          if (readFileSync(file, 'utf8').trim() === String(process.pid)) unlinkSync(file);
        } catch { /* already gone */ }
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      let pid = NaN;
      try {
        pid = Number(readFileSync(file, 'utf8').trim());
      } catch { /* removed meanwhile: try again */ }
      if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) {
        throw new EmbeddedDbBusyError(
          `the embedded database in ${dir} is in use by another payd process (pid ${pid}); stop it first, ` +
          'or do this through the running server (signing keys: POST /admin/v1/signing-keys/rotate with the operator token)');
      }
      try {
        unlinkSync(file); // the process that held it is gone (or it is ours from before)
      } catch { /* another process took it over first */ }
    }
  }
  throw new EmbeddedDbBusyError(`the embedded database in ${dir} is being opened by another payd process; try again`);
}
