// A `stripe` entry of PAYD_PARTNERS (docs/connectors.md, Stripe): the default account's
// key, per-entity accounts, the API base (a local mock in tests), the webhook signing
// secrets and the currencies. Every refusal names the entry and the field.
import type { ConnectorDefinition } from '../catalogue.ts';
import type { EntryReader } from '../partners-config.ts';
import { type StripeAccount, StripeConnector } from './stripe-connector.ts';

export interface StripeEntry extends Record<string, unknown> {
  secretKey?: string;
  accounts?: StripeAccount[];
  apiBase?: string;
  webhookSecret?: string;
  currencies?: string[];
}

export const stripeDefinition: ConnectorDefinition<StripeEntry> = {
  parse(e, read) {
    const { at } = read;
    const secretKey = read.secret('secret_key');
    keyOk(read, secretKey, at);
    const accounts = e.accounts === undefined ? undefined : parseAccounts(read, e.accounts, secretKey);
    if (!secretKey && !accounts) read.fail(`${at}: a Stripe secret key (sk_test_..., sk_live_...) is required in secret_key_env, or per-entity accounts`);
    const apiBase = read.str('api_base');
    if (apiBase) {
      const protocol = URL.canParse(apiBase) ? new URL(apiBase).protocol : undefined;
      if (protocol !== 'http:' && protocol !== 'https:') read.fail(`${at}.api_base must be an http(s) URL`);
    }
    const currencies = e.currencies;
    if (currencies !== undefined && (!Array.isArray(currencies) || !currencies.every((c) => typeof c === 'string' && /^[A-Z]{3}$/.test(c)))) {
      read.fail(`${at}.currencies must be an array of ISO 4217 codes such as "EUR"`);
    }
    const webhookSecret = read.secret('webhook_secret');
    return {
      ...(secretKey ? { secretKey } : {}), ...(accounts ? { accounts } : {}),
      ...(apiBase ? { apiBase } : {}), ...(webhookSecret ? { webhookSecret } : {}),
      ...(currencies ? { currencies: currencies as string[] } : {}),
    };
  },
  create: (spec) => new StripeConnector({
    name: spec.name, secretKey: spec.secretKey, accounts: spec.accounts, apiBase: spec.apiBase, webhookSecret: spec.webhookSecret, currencies: spec.currencies,
  }),
};

function keyOk(read: EntryReader, k: string | undefined, where: string): void {
  if (k !== undefined && !/^(sk|rk)_(test|live)_/.test(k)) read.fail(`${where}: the Stripe secret key must start with sk_test_, sk_live_, rk_test_ or rk_live_`);
}

/**
 * A Stripe entry's per-entity accounts: each names the entities whose payments it takes,
 * with its own key, or a connected account of the default key (Stripe Connect), or both.
 * An entity is named once.
 */
function parseAccounts(read: EntryReader, raw: unknown, defaultKey: string | undefined): StripeAccount[] {
  const { at } = read;
  if (!Array.isArray(raw) || raw.length === 0) read.fail(`${at}.accounts must be a non-empty array`);
  const seen = new Set<string>();
  return (raw as unknown[]).map((a, j): StripeAccount => {
    const where = `${at}.accounts[${j}]`;
    if (typeof a !== 'object' || a === null || Array.isArray(a)) read.fail(`${where} must be an object`);
    const o = a as Record<string, unknown>;
    const known = new Set(['entities', 'secret_key', 'secret_key_env', 'stripe_account', 'webhook_secret', 'webhook_secret_env']);
    const unknown = Object.keys(o).find((k) => !known.has(k));
    if (unknown) read.fail(`${where}.${unknown} is not a field of an account (${[...known].join(', ')})`);
    const entities = o.entities;
    if (!Array.isArray(entities) || entities.length === 0 || !entities.every((x) => typeof x === 'string' && x !== '')) {
      read.fail(`${where}.entities must be a non-empty array of entity ids`);
    }
    for (const id of entities as string[]) {
      if (seen.has(id)) read.fail(`${where}.entities: entity ${id} is named by two accounts`);
      seen.add(id);
    }
    const secretKey = read.secret('secret_key', o, where);
    keyOk(read, secretKey, where);
    const stripeAccount = read.str('stripe_account', o, where);
    if (stripeAccount !== undefined && !/^acct_[A-Za-z0-9]+$/.test(stripeAccount)) read.fail(`${where}.stripe_account must be a connected account id (acct_...)`);
    if (!secretKey && !stripeAccount) read.fail(`${where}: give its own secret_key_env or a stripe_account of the default key`);
    if (!secretKey && !defaultKey) read.fail(`${where}.stripe_account needs the entry's secret_key_env (the platform's key)`);
    const webhookSecret = read.secret('webhook_secret', o, where);
    return {
      entities: entities as string[], ...(secretKey ? { secretKey } : {}), ...(stripeAccount ? { stripeAccount } : {}),
      ...(webhookSecret ? { webhookSecret } : {}),
    };
  });
}
