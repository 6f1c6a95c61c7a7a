// Pages of an in-process partner: an optimisation of the simulators, not part of the
// connector port (as inline.ts). The card simulator serves its 3-D Secure page on payd's
// public origin; a connector across a network has its pages at the partner and never
// implements this. app.ts registers them once at start, each in its own scope.
import type { FastifyInstance } from 'fastify';
import type { PartnerConnector } from './port.ts';

export interface PartnerWithPages {
  registerRoutes(app: FastifyInstance): Promise<void>;
}

/** The partner's own pages, or undefined (not such a partner). */
export function partnerPages(connector: PartnerConnector): PartnerWithPages | undefined {
  const withPages = connector as PartnerConnector & Partial<PartnerWithPages>;
  return typeof withPages.registerRoutes === 'function' ? (withPages as PartnerConnector & PartnerWithPages) : undefined;
}
