// The simulators as PAYD_PARTNERS entries: no field of their own, and each answers to its
// own name (its test data and the ACS page are keyed by it).
import type { ConnectorDefinition } from '../catalogue.ts';
import { BnplSimulator } from './bnpl.ts';
import { CardAcquirerSimulator } from './card-acquirer.ts';
import { GiftCardSimulator } from './gift-card.ts';

const SIMULATORS = { 'card-sim': CardAcquirerSimulator, 'gift-sim': GiftCardSimulator, 'bnpl-sim': BnplSimulator } as const;

export function simulatorDefinition(connector: keyof typeof SIMULATORS): ConnectorDefinition<Record<string, never>> {
  return {
    parse(_entry, read) {
      if (read.name !== connector) read.fail(`PAYD_PARTNERS: the simulator ${connector} runs under its own name, not ${read.name}`);
      return {};
    },
    create: (_spec, { db, sim }) => new SIMULATORS[connector](db, sim),
  };
}
