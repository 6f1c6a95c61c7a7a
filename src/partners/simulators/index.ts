import type { Db } from '../../platform/db/index.ts';
import { PartnerRegistry } from '../port.ts';
import { BnplSimulator } from './bnpl.ts';
import { CardAcquirerSimulator } from './card-acquirer.ts';
import { GiftCardSimulator } from './gift-card.ts';
import type { SimOptions } from './simulated-partner.ts';

export { CardAcquirerSimulator, GiftCardSimulator, BnplSimulator };

export function simulatedPartners(db: Db, options: SimOptions): PartnerRegistry {
  return new PartnerRegistry()
    .register(new CardAcquirerSimulator(db, options))
    .register(new GiftCardSimulator(db, options))
    .register(new BnplSimulator(db, options));
}
