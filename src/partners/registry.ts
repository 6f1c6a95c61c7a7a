// The partners this payd runs: each PAYD_PARTNERS entry built by its connector's
// definition (catalogue.ts), or the simulators when PAYD_PARTNERS is unset.
import type { Db } from '../platform/db/index.ts';
import { CONNECTOR_DEFINITIONS } from './catalogue.ts';
import type { PartnerSpec } from './partners-config.ts';
import { PartnerRegistry } from './port.ts';
import { simulatedPartners } from './simulators/index.ts';
import type { SimOptions } from './simulators/simulated-partner.ts';

export function configuredPartners(db: Db, options: SimOptions, specs: PartnerSpec[] | undefined): PartnerRegistry {
  if (!specs) return simulatedPartners(db, options);
  const registry = new PartnerRegistry();
  for (const spec of specs) {
    const definition = CONNECTOR_DEFINITIONS[spec.connector];
    if (!definition) throw new Error(`PAYD_PARTNERS: no connector ${spec.connector}`); // (parsePartners refused it already)
    registry.register(definition.create(spec, { db, sim: options }));
  }
  return registry;
}
