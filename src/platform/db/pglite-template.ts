// The embedded database's starting point: a PGlite data directory in which initdb has
// run and every migration is applied, dumped to dist/pglite-template.tar.gz by `npm run
// build`. A new embedded database starts from it in one step instead of running initdb
// (about 9 s of CPU in PGlite's WASM) and the migrations one by one. Existing databases
// never see it: they open as they are and migrate in order (migrator.ts).
//
// The template records the PGlite version that wrote it and the checksums of the
// migrations in it; it is used only when both match this payd (a PGlite upgrade or an
// edited migration without a rebuild falls back to initdb), and migrations newer than
// the template then apply in order as on any database.
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { packagePath } from '../paths.ts';
import { Readable } from 'node:stream';
import { createGunzip, gzipSync } from 'node:zlib';
import { loadMigrations, migrate, type Migration } from './migrator.ts';
import { createPgliteDb } from './pglite.ts';

/** From src/platform/db or dist/platform/db alike: the package's dist/. */
export const TEMPLATE_FILE = packagePath('dist', 'pglite-template.tar.gz');

interface TemplateInfo {
  pglite: string;
  migrations: Array<{ version: number; checksum: string }>;
}

const infoFile = (file: string) => file.replace(/\.tar\.gz$/, '.json');

function pgliteVersion(): string {
  const require = createRequire(import.meta.url);
  const main = require.resolve('@electric-sql/pglite');
  // .../node_modules/@electric-sql/pglite/dist/index.cjs -> its package.json
  const pkg = path.join(main.slice(0, main.lastIndexOf(`${path.sep}dist${path.sep}`)), 'package.json');
  return (JSON.parse(readFileSync(pkg, 'utf8')) as { version: string }).version;
}

/**
 * A new PGlite database in memory with `migrations` applied, dumped as a data directory
 * (this template, and the test databases' template in test/helpers/db.ts), without the
 * WAL segments that PostgreSQL recycled for later use (withoutRecycledWal).
 */
export async function migratedDump(migrations: Migration[], compression: 'none' | 'gzip'): Promise<Buffer> {
  const db = await createPgliteDb();
  try {
    await migrate(db, migrations);
    // A checkpoint first, so that the dump carries no WAL to replay on first open.
    await db.exec('CHECKPOINT');
    const walFile = async () => (await db.query<{ f: string }>('SELECT pg_walfile_name(pg_current_wal_lsn()) AS f')).rows[0]!.f;
    const before = await walFile();
    const tar = Buffer.from(await (await db.dump('none')).arrayBuffer());
    const after = await walFile(); // (the same, unless the dump itself wrote WAL)
    const trimmed = withoutRecycledWal(tar, after > before ? after : before);
    return compression === 'gzip' ? gzipSync(trimmed) : trimmed;
  } finally {
    await db.close();
  }
}

/**
 * The dump without the WAL segments named after `current` (the segment being written):
 * after a checkpoint PostgreSQL renames old segments ahead of the current one, to reuse
 * them; their content is old WAL, never read (recovery starts at the checkpoint, in the
 * current segment), and a server creates a segment when it reaches one that is missing.
 * Six of the seven 1 MB segments of a fresh dump: a fifth of the 33 MB every new
 * database copies (a test database's PGlite file system, `payd start`'s new data directory).
 */
function withoutRecycledWal(tar: Buffer, current: string): Buffer {
  const kept: Buffer[] = [];
  let end = 0;
  for (const e of tarEntries(tar)) {
    const segment = /^pg_wal\/([0-9A-F]{24})$/.exec(e.name)?.[1];
    if (!(segment && segment > current)) kept.push(tar.subarray(e.header, e.end));
    end = e.end;
  }
  kept.push(tar.subarray(end)); // the two empty blocks that end the archive
  return Buffer.concat(kept);
}

/** Writes the template (npm run build): initdb and every migration in memory, then a dump. */
export async function writeTemplate(file = TEMPLATE_FILE, migrations: Migration[] = loadMigrations()): Promise<void> {
  writeFileSync(file, await migratedDump(migrations, 'gzip'));
  const info: TemplateInfo = { pglite: pgliteVersion(), migrations: migrations.map((m) => ({ version: m.version, checksum: m.checksum })) };
  writeFileSync(infoFile(file), `${JSON.stringify(info, null, 2)}\n`);
}

/**
 * The template, when there is one that fits: written by this PGlite, and its migrations
 * exactly this payd's first ones (the later ones then apply in order). Otherwise undefined.
 */
export function usableTemplate(file = TEMPLATE_FILE, migrations: Migration[] = loadMigrations()): Buffer | undefined {
  if (!existsSync(file) || !existsSync(infoFile(file))) return undefined;
  try {
    const info = JSON.parse(readFileSync(infoFile(file), 'utf8')) as TemplateInfo;
    if (info.pglite !== pgliteVersion()) return undefined;
    if (info.migrations.length > migrations.length) return undefined;
    if (info.migrations.some((m, i) => migrations[i]?.version !== m.version || migrations[i]?.checksum !== m.checksum)) return undefined;
    return readFileSync(file);
  } catch {
    return undefined;
  }
}

/**
 * Unpacks the template into `dir` (an empty or absent directory): into a sibling first,
 * then renamed into place, so that an interrupted start leaves no half database behind.
 * Native file writes: PGlite's own loader (loadDataDir) writes the 27 MB through its WASM
 * file system, about a second more. Streamed, chunk by chunk from the decompressor to the
 * files: a 27 MB archive in one buffer, freed, stays in the process's memory (glibc's heap
 * keeps it; 40 MB more RSS once started). Returns false (nothing done) when there is no
 * usable template or `dir` is not empty.
 */
export async function installTemplate(dir: string, file = TEMPLATE_FILE): Promise<boolean> {
  const gz = usableTemplate(file);
  if (!gz) return false;
  const tmp = `${dir}.new-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  try {
    await untar(Readable.from([gz]).pipe(createGunzip({ chunkSize: 64 * 1024 })), tmp);
    renameSync(tmp, dir);
    return true;
  } catch {
    rmSync(tmp, { recursive: true, force: true });
    return false;
  }
}

/** An entry of a ustar archive as PGlite's dumpDataDir writes it: directories and regular files. */
interface TarEntry {
  /** The path within the archive, relative (a leading / dropped). */
  name: string;
  /** '0' a regular file, '5' a directory. */
  type: string;
  mode: number;
  /** The content's length; it follows the 512-byte header, padded to a multiple of 512. */
  size: number;
}

const padded = (size: number) => Math.ceil(size / 512) * 512;

/** The entry a 512-byte header block describes; undefined for the empty blocks that end the archive. */
function tarHeader(block: Buffer): TarEntry | undefined {
  const field = (at: number, len: number) => block.toString('latin1', at, at + len).replace(/\0.*$/s, '');
  const name = field(0, 100);
  if (!name) return undefined;
  const prefix = field(345, 155);
  return {
    name: path.posix.normalize(`${prefix ? `${prefix}/` : ''}${name}`).replace(/^\/+/, ''),
    type: field(156, 1) || '0',
    mode: parseInt(field(100, 8).trim() || '0', 8) & 0o777,
    size: parseInt(field(124, 12).trim() || '0', 8),
  };
}

/** The archive in `tar`, entry by entry, with each entry's offset and the next one's. */
function* tarEntries(tar: Buffer): Generator<TarEntry & { header: number; end: number }> {
  for (let at = 0; at + 512 <= tar.length;) {
    const e = tarHeader(tar.subarray(at, at + 512));
    if (!e) return;
    const end = at + 512 + padded(e.size);
    yield { ...e, header: at, end };
    at = end;
  }
}

/** Writes the archive's directories and regular files under `into`, as its chunks come. */
async function untar(chunks: AsyncIterable<Buffer>, into: string): Promise<void> {
  mkdirSync(into, { recursive: true, mode: 0o700 });
  let header = Buffer.alloc(0); // the next header's bytes gathered so far
  let file: { fd: number; left: number; target: string; mode: number } | undefined;
  let skip = 0; // the padding after a file's content
  try {
    for await (let chunk of chunks) {
      while (chunk.length > 0) {
        if (file) {
          const n = Math.min(file.left, chunk.length);
          writeSync(file.fd, chunk, 0, n);
          file.left -= n;
          chunk = chunk.subarray(n);
          if (file.left === 0) {
            closeSync(file.fd);
            chmodSync(file.target, file.mode);
            file = undefined;
          }
          continue;
        }
        if (skip > 0) {
          const n = Math.min(skip, chunk.length);
          skip -= n;
          chunk = chunk.subarray(n);
          continue;
        }
        const need = 512 - header.length;
        header = Buffer.concat([header, chunk.subarray(0, need)]);
        chunk = chunk.subarray(need);
        if (header.length < 512) continue;
        const e = tarHeader(header);
        header = Buffer.alloc(0);
        if (!e) return; // the two empty blocks at the end
        if (e.name.startsWith('..')) throw new Error(`template entry outside the data directory: ${e.name}`);
        const target = path.join(into, e.name);
        if (e.type === '5') {
          mkdirSync(target, { recursive: true, mode: e.mode || 0o700 });
        } else if (e.type === '0') {
          mkdirSync(path.dirname(target), { recursive: true, mode: 0o700 });
          const mode = e.mode || 0o600;
          const fd = openSync(target, 'w', mode);
          if (e.size > 0) file = { fd, left: e.size, target, mode };
          else {
            closeSync(fd);
            chmodSync(target, mode);
          }
          skip = padded(e.size) - e.size;
        } else {
          throw new Error(`unexpected template entry type ${e.type} (${e.name})`);
        }
      }
    }
    if (file) throw new Error(`the template ends inside ${file.target}`);
  } finally {
    if (file) closeSync(file.fd);
  }
}
