// Dashboard pages beside payments: payment links (links.routes.ts) and Developers (API keys,
// developers.routes.ts), and the dependencies the pages of an entity pick from (ExtraDeps).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Db } from '../platform/db/index.ts';
import type { ReadRouter } from '../platform/db/reads.ts';
import type { EntitiesService } from '../admin/entities.service.ts';
import type { PaymentLinksService } from '../links/links.service.ts';
import type { Member } from './access.tsx';
import type { Role } from './members.ts';
import type { DashboardService } from './dashboard.service.ts';
import { linkRoutes } from './links.routes.ts';
import { developerRoutes } from './developers.routes.ts';

/** The signed-in member of the URL's entity; amr: how this sign-in was made (RFC 8176, src/identity/mfa/amr.ts). */
export type { Member };

export interface ExtraDeps {
  /** The primary database, for the pages that take it (links and developers go through the services). */
  db: Db;
  reads: ReadRouter;
  /** The staleness a page may show (auth.routes.ts). */
  staleOk: (request: FastifyRequest) => number;
  /** The dashboard's own reads and writes (the action log, the request log, sign-ins). */
  dashboard: DashboardService;
  links: PaymentLinksService;
  entities: EntitiesService;
  onApiKeyRevoked: (keyId: string) => void;
  member: (request: FastifyRequest, reply: FastifyReply, needs?: Role) => Promise<Member | undefined>;
  csrfOk: (request: FastifyRequest, m: { raw: string }) => boolean;
}

export async function linkAndKeyRoutes(app: FastifyInstance, deps: ExtraDeps) {
  await linkRoutes(app, deps);
  await developerRoutes(app, deps);
}
