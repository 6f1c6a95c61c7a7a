// The master key encrypts private signing keys at rest. Production passes it in
// PAYD_MASTER_KEY (32 bytes, base64); development generates one under the data dir.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface MasterKeySource {
  key: Buffer;
  /** 'generated': made now and not yet saved (saveMasterKey writes it). */
  origin: 'env' | 'file' | 'generated';
  file?: string;
}

function parse(raw: string, where: string): Buffer {
  const key = Buffer.from(raw.trim(), 'base64');
  if (key.length !== 32) throw new Error(`${where} must be 32 bytes encoded in base64 (openssl rand -base64 32)`);
  return key;
}

/** The configured key, or the one saved in the data dir, or a new one (not saved yet): reads only. */
export function readMasterKey(configured: string | undefined, dataDir: string): MasterKeySource {
  if (configured) return { key: parse(configured, 'PAYD_MASTER_KEY'), origin: 'env' };
  const file = path.join(dataDir, 'master.key');
  if (existsSync(file)) return { key: parse(readFileSync(file, 'utf8'), file), origin: 'file', file };
  return { key: randomBytes(32), origin: 'generated', file };
}

/** Saves a generated key in the data dir (once start-up checks have passed). */
export function saveMasterKey(source: MasterKeySource): void {
  if (source.origin !== 'generated' || !source.file) return;
  mkdirSync(path.dirname(source.file), { recursive: true });
  writeFileSync(source.file, source.key.toString('base64') + '\n', { mode: 0o600, flag: 'wx' });
}

export function resolveMasterKey(configured: string | undefined, dataDir: string): MasterKeySource {
  const source = readMasterKey(configured, dataDir);
  saveMasterKey(source);
  return source;
}
