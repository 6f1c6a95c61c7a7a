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
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { packagePath } from '../paths.ts';
import { gunzipSync } from 'node:zlib';
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
 * (this template, and the test databases' template in test/helpers/db.ts).
 */
export async function migratedDump(migrations: Migration[], compression: 'none' | 'gzip'): Promise<Blob> {
  const db = await createPgliteDb();
  try {
    await migrate(db, migrations);
    // A checkpoint first, so that the dump carries no WAL to replay on first open.
    await db.exec('CHECKPOINT');
    return await db.dump(compression);
  } finally {
    await db.close();
  }
}

/** Writes the template (npm run build): initdb and every migration in memory, then a dump. */
export async function writeTemplate(file = TEMPLATE_FILE, migrations: Migration[] = loadMigrations()): Promise<void> {
  writeFileSync(file, Buffer.from(await (await migratedDump(migrations, 'gzip')).arrayBuffer()));
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
 * Native file writes: PGlite's own loader (loadDataDir) writes the 33 MB through its WASM
 * file system, about a second more. Returns false (nothing done) when there is no usable
 * template or `dir` is not empty.
 */
export function installTemplate(dir: string, file = TEMPLATE_FILE): boolean {
  const gz = usableTemplate(file);
  if (!gz) return false;
  const tmp = `${dir}.new-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  try {
    untar(gunzipSync(gz), tmp);
    renameSync(tmp, dir);
    return true;
  } catch {
    rmSync(tmp, { recursive: true, force: true });
    return false;
  }
}

/** A ustar archive as PGlite's dumpDataDir writes it: directories and regular files. */
function untar(tar: Buffer, into: string): void {
  mkdirSync(into, { recursive: true, mode: 0o700 });
  const field = (at: number, len: number) => tar.toString('latin1', at, at + len).replace(/\0.*$/s, '');
  for (let at = 0; at + 512 <= tar.length;) {
    const name = field(at, 100);
    if (!name) break; // the two empty blocks at the end
    const prefix = field(at + 345, 155);
    const size = parseInt(field(at + 124, 12).trim() || '0', 8);
    const mode = parseInt(field(at + 100, 8).trim() || '0', 8) & 0o777;
    const type = field(at + 156, 1) || '0';
    const rel = path.posix.normalize(`${prefix ? `${prefix}/` : ''}${name}`).replace(/^\/+/, '');
    if (rel.startsWith('..')) throw new Error(`template entry outside the data directory: ${rel}`);
    const target = path.join(into, rel);
    const body = at + 512;
    if (type === '5') {
      mkdirSync(target, { recursive: true, mode: mode || 0o700 });
    } else if (type === '0') {
      mkdirSync(path.dirname(target), { recursive: true, mode: 0o700 });
      writeFileSync(target, tar.subarray(body, body + size), { mode: mode || 0o600 });
      chmodSync(target, mode || 0o600);
    } else {
      throw new Error(`unexpected template entry type ${type} (${rel})`);
    }
    at = body + Math.ceil(size / 512) * 512;
  }
}
