// Which partners run, and with which credentials: PAYD_PARTNERS (docs/connectors.md).
// Unset: the three simulators. Set: a JSON array, inline or in the file it names, e.g.
//   [{"name": "card-sim"}, {"name": "gift-sim"},
//    {"name": "stripe", "secret_key_env": "STRIPE_SECRET_KEY", "webhook_secret_env": "STRIPE_WEBHOOK_SECRET",
//     "accounts": [{"entities": ["<entity id>"], "secret_key_env": "SHOP_B_STRIPE_KEY"},
//                  {"entities": ["<entity id>"], "stripe_account": "acct_..."}]}]
// Secrets may be given inline (secret_key) but belong in their own variables (*_env).
import { readFileSync } from 'node:fs';
import type { StripeAccount } from './stripe/stripe-connector.ts';

export const SIMULATORS = ['card-sim', 'gift-sim', 'bnpl-sim'] as const;
export const CONNECTORS = [...SIMULATORS, 'stripe'] as const;

export type PartnerSpec =
  | { name: string; connector: (typeof SIMULATORS)[number] }
  | { name: string; connector: 'stripe'; secretKey?: string; accounts?: StripeAccount[]; apiBase?: string; webhookSecret?: string; currencies?: string[] };

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
    const str = (k: string) => strOf(e, at, k);
    const name = str('name');
    if (!name || !/^[a-z0-9][a-z0-9-]{0,39}$/.test(name)) throw new PartnersConfigError(`${at}.name must be lower-case letters, digits and dashes (up to 40)`);
    if (names.has(name)) throw new PartnersConfigError(`${at}.name ${name} is listed twice`);
    names.add(name);
    const connector = str('connector') ?? name;
    if (!(CONNECTORS as readonly string[]).includes(connector)) {
      throw new PartnersConfigError(`${at}.connector must be one of ${CONNECTORS.join(', ')} (got ${connector})`);
    }
    if (connector !== 'stripe') return { name, connector: connector as (typeof SIMULATORS)[number] };
    const secret = (obj: Record<string, unknown>, where: string, k: string) => {
      const inline = strOf(obj, where, k);
      const fromEnv = strOf(obj, where, `${k}_env`);
      if (inline && fromEnv) throw new PartnersConfigError(`${where}: give ${k} or ${k}_env, not both`);
      if (fromEnv && !env[fromEnv]) throw new PartnersConfigError(`${where}.${k}_env names ${fromEnv}, which is not set`);
      return inline ?? (fromEnv ? env[fromEnv] : undefined);
    };
    const keyOk = (k: string | undefined, where: string) => {
      if (k !== undefined && !/^(sk|rk)_(test|live)_/.test(k)) throw new PartnersConfigError(`${where}: the Stripe secret key must start with sk_test_, sk_live_, rk_test_ or rk_live_`);
    };
    const secretKey = secret(e, at, 'secret_key');
    keyOk(secretKey, at);
    const accounts = e.accounts === undefined ? undefined : parseAccounts(e.accounts, at, secretKey, secret, keyOk);
    if (!secretKey && !accounts) throw new PartnersConfigError(`${at}: a Stripe secret key (sk_test_..., sk_live_...) is required in secret_key_env, or per-entity accounts`);
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
    const webhookSecret = secret(e, at, 'webhook_secret');
    return {
      name, connector: 'stripe', ...(secretKey ? { secretKey } : {}), ...(accounts ? { accounts } : {}),
      ...(apiBase ? { apiBase } : {}), ...(webhookSecret ? { webhookSecret } : {}),
      ...(currencies ? { currencies: currencies as string[] } : {}),
    };
  });
}

function strOf(obj: Record<string, unknown>, at: string, k: string): string | undefined {
  if (obj[k] === undefined) return undefined;
  if (typeof obj[k] !== 'string' || obj[k] === '') throw new PartnersConfigError(`${at}.${k} must be a non-empty string`);
  return obj[k] as string;
}

/**
 * A Stripe entry's per-entity accounts: each names the entities whose payments it takes,
 * with its own key, or a connected account of the default key (Stripe Connect), or both.
 * An entity is named once.
 */
function parseAccounts(raw: unknown, at: string, defaultKey: string | undefined,
  secret: (obj: Record<string, unknown>, where: string, k: string) => string | undefined,
  keyOk: (k: string | undefined, where: string) => void): StripeAccount[] {
  if (!Array.isArray(raw) || raw.length === 0) throw new PartnersConfigError(`${at}.accounts must be a non-empty array`);
  const seen = new Set<string>();
  return raw.map((a, j): StripeAccount => {
    const where = `${at}.accounts[${j}]`;
    if (typeof a !== 'object' || a === null || Array.isArray(a)) throw new PartnersConfigError(`${where} must be an object`);
    const o = a as Record<string, unknown>;
    const known = new Set(['entities', 'secret_key', 'secret_key_env', 'stripe_account', 'webhook_secret', 'webhook_secret_env']);
    const unknown = Object.keys(o).find((k) => !known.has(k));
    if (unknown) throw new PartnersConfigError(`${where}.${unknown} is not a field of an account (${[...known].join(', ')})`);
    const entities = o.entities;
    if (!Array.isArray(entities) || entities.length === 0 || !entities.every((x) => typeof x === 'string' && x !== '')) {
      throw new PartnersConfigError(`${where}.entities must be a non-empty array of entity ids`);
    }
    for (const id of entities as string[]) {
      if (seen.has(id)) throw new PartnersConfigError(`${where}.entities: entity ${id} is named by two accounts`);
      seen.add(id);
    }
    const secretKey = secret(o, where, 'secret_key');
    keyOk(secretKey, where);
    const stripeAccount = strOf(o, where, 'stripe_account');
    if (stripeAccount !== undefined && !/^acct_[A-Za-z0-9]+$/.test(stripeAccount)) throw new PartnersConfigError(`${where}.stripe_account must be a connected account id (acct_...)`);
    if (!secretKey && !stripeAccount) throw new PartnersConfigError(`${where}: give its own secret_key_env or a stripe_account of the default key`);
    if (!secretKey && !defaultKey) throw new PartnersConfigError(`${where}.stripe_account needs the entry's secret_key_env (the platform's key)`);
    const webhookSecret = secret(o, where, 'webhook_secret');
    return {
      entities: entities as string[], ...(secretKey ? { secretKey } : {}), ...(stripeAccount ? { stripeAccount } : {}),
      ...(webhookSecret ? { webhookSecret } : {}),
    };
  });
}
