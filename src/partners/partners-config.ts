// Which partners run, and with which credentials: PAYD_PARTNERS (docs/connectors.md).
// Unset: the three simulators. Set: a JSON array, inline or in the file it names, e.g.
//   [{"name": "card-sim"}, {"name": "gift-sim"},
//    {"name": "stripe", "secret_key_env": "STRIPE_SECRET_KEY", "webhook_secret_env": "STRIPE_WEBHOOK_SECRET"}]
// Secrets may be given inline (secret_key) but belong in their own variables (*_env).
import { readFileSync } from 'node:fs';

export const SIMULATORS = ['card-sim', 'gift-sim', 'bnpl-sim'] as const;
export const CONNECTORS = [...SIMULATORS, 'stripe'] as const;

export type PartnerSpec =
  | { name: string; connector: (typeof SIMULATORS)[number] }
  | { name: string; connector: 'stripe'; secretKey: string; apiBase?: string; webhookSecret?: string; currencies?: string[] };

/** A PAYD_PARTNERS that cannot run: the message names the entry and the field. */
export class PartnersConfigError extends Error {}

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
  return list.map((entry, i): PartnerSpec => {
    const at = `PAYD_PARTNERS[${i}]`;
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) throw new PartnersConfigError(`${at} must be an object`);
    const e = entry as Record<string, unknown>;
    const str = (k: string) => {
      if (e[k] === undefined) return undefined;
      if (typeof e[k] !== 'string' || e[k] === '') throw new PartnersConfigError(`${at}.${k} must be a non-empty string`);
      return e[k] as string;
    };
    const name = str('name');
    if (!name || !/^[a-z0-9][a-z0-9-]{0,39}$/.test(name)) throw new PartnersConfigError(`${at}.name must be lower-case letters, digits and dashes (up to 40)`);
    if (names.has(name)) throw new PartnersConfigError(`${at}.name ${name} is listed twice`);
    names.add(name);
    const connector = str('connector') ?? name;
    if (!(CONNECTORS as readonly string[]).includes(connector)) {
      throw new PartnersConfigError(`${at}.connector must be one of ${CONNECTORS.join(', ')} (got ${connector})`);
    }
    if (connector !== 'stripe') return { name, connector: connector as (typeof SIMULATORS)[number] };
    const secret = (k: string) => {
      const inline = str(k);
      const fromEnv = str(`${k}_env`);
      if (inline && fromEnv) throw new PartnersConfigError(`${at}: give ${k} or ${k}_env, not both`);
      if (fromEnv && !env[fromEnv]) throw new PartnersConfigError(`${at}.${k}_env names ${fromEnv}, which is not set`);
      return inline ?? (fromEnv ? env[fromEnv] : undefined);
    };
    const secretKey = secret('secret_key');
    if (!secretKey || !/^(sk|rk)_(test|live)_/.test(secretKey)) throw new PartnersConfigError(`${at}: a Stripe secret key (sk_test_..., sk_live_...) is required in secret_key_env`);
    const apiBase = str('api_base');
    if (apiBase) {
      try {
        const u = new URL(apiBase);
        if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error();
      } catch {
        throw new PartnersConfigError(`${at}.api_base must be an http(s) URL`);
      }
    }
    const currencies = e.currencies;
    if (currencies !== undefined && (!Array.isArray(currencies) || !currencies.every((c) => typeof c === 'string' && /^[A-Z]{3}$/.test(c)))) {
      throw new PartnersConfigError(`${at}.currencies must be an array of ISO 4217 codes such as "EUR"`);
    }
    const webhookSecret = secret('webhook_secret');
    return {
      name, connector: 'stripe', secretKey, ...(apiBase ? { apiBase } : {}), ...(webhookSecret ? { webhookSecret } : {}),
      ...(currencies ? { currencies: currencies as string[] } : {}),
    };
  });
}
