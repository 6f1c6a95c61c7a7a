// Profiles of the payd CLI: `payd login --api-key payd_sk_... [--base-url URL] [--profile NAME]`
// keeps a merchant's API key and payd's URL in $XDG_CONFIG_HOME/payd/config.json (default
// ~/.config/payd/config.json), readable by its owner only (mode 0600, its directory 0700).
// Every client command (listen, trigger, payments, events, webhook-endpoints) reads it when
// neither --api-key nor PAYD_API_KEY gives a key; --profile (or PAYD_PROFILE) picks one,
// "default" otherwise. The key is never printed back in full.
import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

export class ProfileError extends Error {}

export interface Profile { api_key: string; base_url?: string | undefined }
interface ConfigFile { profiles: Record<string, Profile> }

const NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/** The directory of the CLI's configuration: $XDG_CONFIG_HOME/payd, else ~/.config/payd. */
export function configDir(env: NodeJS.ProcessEnv): string {
  const xdg = env.XDG_CONFIG_HOME;
  // The XDG spec: a relative XDG_CONFIG_HOME is invalid and is ignored.
  const base = xdg && path.isAbsolute(xdg) ? xdg : path.join(env.HOME || homedir(), '.config');
  return path.join(base, 'payd');
}

export const configFile = (env: NodeJS.ProcessEnv) => path.join(configDir(env), 'config.json');

function readConfig(env: NodeJS.ProcessEnv): ConfigFile {
  let text: string;
  try {
    text = readFileSync(configFile(env), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { profiles: {} };
    throw new ProfileError(`cannot read ${configFile(env)}: ${(err as Error).message}`);
  }
  try {
    const parsed = JSON.parse(text) as Partial<ConfigFile>;
    return { profiles: parsed.profiles && typeof parsed.profiles === 'object' ? parsed.profiles : {} };
  } catch {
    throw new ProfileError(`${configFile(env)} is not JSON: fix it or remove it and run payd login again`);
  }
}

/** The profile asked (name given) or the default one; undefined when there is no such profile and none was named. */
export function readProfile(env: NodeJS.ProcessEnv, name: string | undefined): { name: string; profile: Profile } | undefined {
  const chosen = name ?? env.PAYD_PROFILE ?? 'default';
  const profile = Object.hasOwn(readConfig(env).profiles, chosen) ? readConfig(env).profiles[chosen] : undefined;
  if (profile && typeof profile.api_key === 'string') return { name: chosen, profile };
  if (name !== undefined || env.PAYD_PROFILE !== undefined) {
    throw new ProfileError(`no profile "${chosen}" in ${configFile(env)}: payd login --api-key payd_sk_... --profile ${chosen}`);
  }
  return undefined;
}

/** A key as it may be shown: its start and its last four characters. */
export function maskKey(key: string): string {
  return key.length <= 12 ? '…' : `${key.slice(0, 8)}…${key.slice(-4)}`;
}

/** Writes the profile into the configuration file, readable by its owner only. */
export function saveProfile(env: NodeJS.ProcessEnv, name: string, profile: Profile): string {
  const dir = configDir(env);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const config = readConfig(env);
  config.profiles[name] = profile;
  const file = configFile(env);
  // Written aside then renamed: a reader never sees half a file, and the new file is 0600 from its creation.
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
  return file;
}

/**
 * `payd login`: checks the key against the running payd (a token is asked with it), then
 * keeps it. `verify` asks for the token; the command line's parse errors are the caller's.
 */
export async function login(argv: string[], env: NodeJS.ProcessEnv, out: (line: string) => void,
  verify: (apiKey: string, baseUrl: string) => Promise<void>): Promise<void> {
  const { values } = parseArgs({
    args: argv, allowPositionals: false,
    options: { 'api-key': { type: 'string' }, 'base-url': { type: 'string' }, profile: { type: 'string' } },
  });
  const apiKey = values['api-key'] ?? env.PAYD_API_KEY;
  if (!apiKey) throw new ProfileError('payd login --api-key payd_sk_... [--base-url URL] [--profile NAME]: the key is needed (or PAYD_API_KEY)');
  if (!/^[\x21-\x7e]{1,512}$/.test(apiKey)) throw new ProfileError('--api-key: the key as the operator gave it (payd_sk_...)');
  const name = values.profile ?? 'default';
  if (!NAME.test(name)) throw new ProfileError('--profile: 1 to 64 letters, digits, ".", "_" or "-"');
  const baseUrl = values['base-url'] ?? env.PAYD_URL;
  if (baseUrl !== undefined && !/^https?:\/\/[^\s]+$/.test(baseUrl)) throw new ProfileError('--base-url: the http(s) URL of the running payd');
  const base = (baseUrl ?? `http://localhost:${env.PORT ?? 3000}`).replace(/\/+$/, '');
  await verify(apiKey, base);
  const file = saveProfile(env, name, { api_key: apiKey, ...(baseUrl !== undefined ? { base_url: base } : {}) });
  out(`Profile "${name}" saved in ${file} (mode 0600): key ${maskKey(apiKey)}, payd at ${base}`);
  out(name === 'default' ? 'Client commands use it when neither --api-key nor PAYD_API_KEY is given.' : `Use it with --profile ${name} (or PAYD_PROFILE=${name}).`);
}
