// The merchant dashboard at /dashboard (roles api and all): server-rendered pages for the
// people who run a shop's payments (docs/dashboard.md). Users sign in through payd's own
// identity provider (authorization code + PKCE, the built-in first-party application
// payd-dashboard, as the console does); the dashboard's cookie is signed and lives only
// as long as the provider's sign-in session it came from. Every page is authorised here
// by the user's membership of the entity in its URL (not a member: 404), every form
// carries a CSRF token bound to the cookie (src/web), and every action that moves money goes
// through the same services as the API, after a confirmation step, with an idempotency
// key made when the form was shown: a double click or a reload moves money once.
import type { FastifyInstance } from 'fastify';
import type { Db } from '../platform/db/index.ts';
import type { ReadRouter } from '../platform/db/reads.ts';
import type { IdentityService } from '../identity/idp/idp.service.ts';
import type { PaymentsService } from '../payments/payments.service.ts';
import type { OperationsService } from '../payments/operations.service.ts';
import type { PaymentLinksService } from '../links/links.service.ts';
import type { EntitiesService } from '../admin/entities.service.ts';
import type { EligibilityRulesService } from '../eligibility/rules.service.ts';
import type { Mailer } from '../identity/sdk/mail.ts';
import type { WebhooksService } from '../webhooks/webhooks.service.ts';
import { dashboardAuthRoutes } from './auth.routes.ts';
import { homeRoutes } from './home.routes.ts';
import { paymentListRoutes } from './payments-list.routes.ts';
import { paymentRoutes } from './payment.routes.ts';
import { linkAndKeyRoutes } from './links-keys.routes.ts';
import { webhookPageRoutes } from './webhooks.routes.ts';
import { teamPageRoutes } from './members-page.routes.ts';
import { eligibilityPageRoutes } from './eligibility.routes.ts';
import { requestLogPageRoutes } from './requests.routes.ts';
import { DashboardService } from './dashboard.service.ts';
import { TeamService } from './team.service.ts';
import { checkoutOriginsPageRoutes } from './checkout-origins.routes.ts';

export { DASHBOARD_CLIENT_ID } from './auth.routes.ts';
export { csvCell, paymentsCsv } from './payments-csv.ts';

export interface DashboardDeps {
  db: Db;
  /** Where the pages' lists and figures are read (a replica when fresh enough); sign-ins, memberships and actions read db. */
  reads: ReadRouter;
  identity: IdentityService;
  payments: PaymentsService;
  operations: OperationsService;
  /** Origin of payd (the dashboard and, in role all, the identity provider). */
  origin: string;
  links: PaymentLinksService;
  entities: EntitiesService;
  onApiKeyRevoked: (keyId: string) => void;
  webhooks: WebhooksService;
  /** Invitation mails (the identity provider's outbox, SMTP when set) and the links in them. */
  mailer: Mailer;
  baseUrl: string;
  eligibilityRules: EligibilityRulesService;
  /** Origin where the identity provider's /oauth/authorize is served. */
  idpOrigin: string;
  key: Buffer;
  /** The request log's bound (PAYD_REQUEST_LOG_PER_SECOND; 0: off), said on the Requests page. */
  requestLogPerSecond: number;
}

export async function dashboardRoutes(app: FastifyInstance, deps: DashboardDeps) {
  // Pages reach repositories only through services: the API's, and the dashboard's own.
  const dashboard = new DashboardService(deps.db, deps.reads);
  const team = new TeamService({ db: deps.db, entities: deps.entities, identity: deps.identity, mailer: deps.mailer, baseUrl: deps.baseUrl });
  const auth = await dashboardAuthRoutes(app, { dashboard, reads: deps.reads, identity: deps.identity, origin: deps.origin, idpOrigin: deps.idpOrigin, key: deps.key });
  const { member, csrfOk, staleOk } = auth;
  await homeRoutes(app, { dashboard, auth });
  await paymentListRoutes(app, { reads: deps.reads, payments: deps.payments, auth });
  await paymentRoutes(app, { dashboard, payments: deps.payments, operations: deps.operations, webhooks: deps.webhooks, auth });
  await linkAndKeyRoutes(app, { db: deps.db, reads: deps.reads, staleOk, dashboard, links: deps.links, entities: deps.entities, onApiKeyRevoked: deps.onApiKeyRevoked, member, csrfOk });
  await webhookPageRoutes(app, { dashboard, webhooks: deps.webhooks, member, csrfOk });
  await eligibilityPageRoutes(app, { dashboard, rules: deps.eligibilityRules, member, csrfOk });
  await requestLogPageRoutes(app, { dashboard, perSecond: deps.requestLogPerSecond, member });
  await checkoutOriginsPageRoutes(app, { dashboard, entities: deps.entities, member, csrfOk });
  await teamPageRoutes(app, { team, dashboard, member, csrfOk });
}
