// Which partners run, and with which credentials: PAYD_PARTNERS (docs/connectors.md).
// Unset: the three simulators. Set: a JSON array, inline or in the file it names, e.g.
//   [{"name": "card-sim"}, {"name": "gift-sim"},
//    {"name": "stripe", "secret_key_env": "STRIPE_SECRET_KEY", "webhook_secret_env": "STRIPE_WEBHOOK_SECRET",
//     "accounts": [{"entities": ["<entity id>"], "secret_key_env": "SHOP_B_STRIPE_KEY"},
//                  {"entities": ["<entity id>"], "stripe_account": "acct_..."}]}]
// This parser knows only what every entry has (name, connector); the rest of an entry is
// read by its connector's definition (catalogue.ts), with the helpers below. Secrets may
// be given inline (secret_key) but belong in their own variables (*_env).
import { readFileSync } from 'node:fs';
import { CONNECTOR_DEFINITIONS } from './catalogue.ts';

/** One PAYD_PARTNERS entry: its name, its connector, and the options its connector's definition read. */
export type PartnerSpec = { name: string; connector: string } & Record<string, unknown>;

/** A PAYD_PARTNERS that cannot run: the message names the entry and the field. */
export class PartnersConfigError extends Error {}

/** What a connector definition reads an entry's own fields with; every failure names `at` and the field. */
export interface EntryReader {
  /** Where the entry is (PAYD_PARTNERS[i]), for messages. */
  readonly at: string;
  readonly name: string;
  readonly env: Record<string, string | undefined>;
  /** A non-empty string field of `obj` (the entry unless given), or undefined. */
  str(k: string, obj?: Record<string, unknown>, where?: string): string | undefined;
  /** A secret given inline (`k`) or by the variable it names (`k_env`), not both. */
  secret(k: string, obj?: Record<string, unknown>, where?: string): string | undefined;
  fail(message: string): never;
}

export function parsePartners(raw: string | undefined, env: Record<string, string | undefined>,
  read: (path: string) => string = (p) => readFileSync(p, 'utf8')): PartnerSpec[] | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  const text = /^\s*[[{]/.test(raw) ? raw : (() => {
    try {
      return read(raw.trim());
    } catch (err) {
      throw new PartnersConfigError(`PAYD_PARTNERS names the file ${raw.trim()}, which cannot be read (${(err as Error).message})`);
    }
  })();
  let list: unknown;
  try {
    list = JSON.parse(text);
  } catch (err) {
    throw new PartnersConfigError(`PAYD_PARTNERS is not JSON: ${(err as Error).message}`);
  }
  if (!Array.isArray(list) || list.length === 0) throw new PartnersConfigError('PAYD_PARTNERS must be a non-empty JSON array of partners');
  const names = new Set<string>();
  const known = Object.keys(CONNECTOR_DEFINITIONS);
  return list.map((entry, i): PartnerSpec => {
    const at = `PAYD_PARTNERS[${i}]`;
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) throw new PartnersConfigError(`${at} must be an object`);
    const e = entry as Record<string, unknown>;
    const name = strOf(e, at, 'name');
    if (!name || !/^[a-z0-9][a-z0-9-]{0,39}$/.test(name)) throw new PartnersConfigError(`${at}.name must be lower-case letters, digits and dashes (up to 40)`);
    if (names.has(name)) throw new PartnersConfigError(`${at}.name ${name} is listed twice`);
    names.add(name);
    const connector = strOf(e, at, 'connector') ?? name;
    const definition = Object.hasOwn(CONNECTOR_DEFINITIONS, connector) ? CONNECTOR_DEFINITIONS[connector] : undefined;
    if (!definition) throw new PartnersConfigError(`${at}.connector must be one of ${known.join(', ')} (got ${connector})`);
    return { name, connector, ...definition.parse(e, entryReader(e, at, name, env)) };
  });
}

function entryReader(entry: Record<string, unknown>, at: string, name: string, env: Record<string, string | undefined>): EntryReader {
  return {
    at, name, env,
    str: (k, obj = entry, where = at) => strOf(obj, where, k),
    secret(k, obj = entry, where = at) {
      const inline = strOf(obj, where, k);
      const fromEnv = strOf(obj, where, `${k}_env`);
      if (inline && fromEnv) throw new PartnersConfigError(`${where}: give ${k} or ${k}_env, not both`);
      if (fromEnv && !env[fromEnv]) throw new PartnersConfigError(`${where}.${k}_env names ${fromEnv}, which is not set`);
      return inline ?? (fromEnv ? env[fromEnv] : undefined);
    },
    fail(message) {
      throw new PartnersConfigError(message);
    },
  };
}

function strOf(obj: Record<string, unknown>, at: string, k: string): string | undefined {
  if (obj[k] === undefined) return undefined;
  if (typeof obj[k] !== 'string' || obj[k] === '') throw new PartnersConfigError(`${at}.${k} must be a non-empty string`);
  return obj[k] as string;
}
