// Template (docs/connector-template/README.md): Acme's PAYD_PARTNERS entry, e.g.
//   {"name": "acme", "api_base": "https://api.acme.example", "api_key_env": "ACME_KEY", "webhook_secret_env": "ACME_WHSEC"}
// Register it with one line in src/partners/catalogue.ts: `acme: acmeDefinition`.
import type { ConnectorDefinition } from '../../src/partners/catalogue.ts';
import { AcmeConnector } from './acme-connector.ts';

export interface AcmeEntry extends Record<string, unknown> {
  apiBase: string;
  apiKey: string;
  webhookSecret?: string;
}

export const acmeDefinition: ConnectorDefinition<AcmeEntry> = {
  // ADAPT: the entry's own fields; every refusal names the entry and the field (read.fail).
  parse(_entry, read) {
    const apiBase = read.str('api_base') ?? read.fail(`${read.at}.api_base is required`);
    const apiKey = read.secret('api_key') ?? read.fail(`${read.at}: an Acme API key is required in api_key_env`);
    const webhookSecret = read.secret('webhook_secret');
    return { apiBase, apiKey, ...(webhookSecret ? { webhookSecret } : {}) };
  },
  create: (spec) => new AcmeConnector({ name: spec.name, apiBase: spec.apiBase, apiKey: spec.apiKey, webhookSecret: spec.webhookSecret }),
};
