// The partners this payd runs: PAYD_PARTNERS (partners-config.ts), or the simulators.
import type { Db } from '../platform/db/index.ts';
import { type PartnerSpec, PartnersConfigError } from './partners-config.ts';
import { PartnerRegistry } from './port.ts';
import { BnplSimulator, CardAcquirerSimulator, GiftCardSimulator, simulatedPartners } from './simulators/index.ts';
import type { SimOptions } from './simulators/simulated-partner.ts';
import { StripeConnector } from './stripe/stripe-connector.ts';

export function configuredPartners(db: Db, options: SimOptions, specs: PartnerSpec[] | undefined): PartnerRegistry {
  if (!specs) return simulatedPartners(db, options);
  const registry = new PartnerRegistry();
  for (const spec of specs) {
    if (spec.connector === 'stripe') {
      registry.register(new StripeConnector({
        name: spec.name, secretKey: spec.secretKey, accounts: spec.accounts, apiBase: spec.apiBase, webhookSecret: spec.webhookSecret, currencies: spec.currencies,
      }));
      continue;
    }
    // A simulator answers to its own name (its test data and the ACS page are keyed by it).
    if (spec.name !== spec.connector) throw new PartnersConfigError(`PAYD_PARTNERS: the simulator ${spec.connector} runs under its own name, not ${spec.name}`);
    registry.register(spec.connector === 'card-sim' ? new CardAcquirerSimulator(db, options)
      : spec.connector === 'gift-sim' ? new GiftCardSimulator(db, options) : new BnplSimulator(db, options));
  }
  return registry;
}
