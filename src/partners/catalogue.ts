// The connectors payd can run, by the name a PAYD_PARTNERS entry gives as `connector`
// (docs/connectors.md, "Adding a connector"): each one's definition reads its entry's own
// fields and builds the connector. A new connector is one more line here, and nothing
// else in payd names it.
import type { Db } from '../platform/db/index.ts';
import type { EntryReader } from './partners-config.ts';
import type { PartnerConnector } from './port.ts';
import { simulatorDefinition } from './simulators/definition.ts';
import type { SimOptions } from './simulators/simulated-partner.ts';
import { stripeDefinition } from './stripe/stripe-config.ts';

/** What a connector may need from payd to be built (the simulators keep their ledger in payd's database). */
export interface ConnectorDeps {
  db: Db;
  sim: SimOptions;
}

export interface ConnectorDefinition<O extends Record<string, unknown> = Record<string, unknown>> {
  /** The entry's own fields (beyond name and connector), checked: a PartnersConfigError names the field. */
  parse(entry: Record<string, unknown>, read: EntryReader): O;
  /** The connector of an entry, named by it. */
  create(spec: { name: string } & O, deps: ConnectorDeps): PartnerConnector;
}

/** A definition of any connector (each reads options of its own shape). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the options' shape is each definition's own
type AnyDefinition = ConnectorDefinition<any>;

/** Keyed by connector name; the order is the one error messages list. */
export const CONNECTOR_DEFINITIONS: Readonly<Record<string, AnyDefinition>> = {
  'card-sim': simulatorDefinition('card-sim'),
  'gift-sim': simulatorDefinition('gift-sim'),
  'bnpl-sim': simulatorDefinition('bnpl-sim'),
  stripe: stripeDefinition,
};
