// What the dashboard's pages read and write of their own (its routes reach repositories only
// through services: this one, team.service.ts and the domain services of the API): the
// signed-in user and their memberships, the action log of the dashboard's forms (who did
// what, and the forms' keys that make a double post act once), the home page's figures and
// the request log's page. Lists and figures are read where the page allows (`lag`: the
// replica when it is fresh enough); sign-ins, memberships and actions read the primary.
import type { Db, Queryable } from '../platform/db/index.ts';
import type { ReadRouter } from '../platform/db/reads.ts';
import { requestLogRepo, type RequestLogRow } from '../platform/observability/request-log.repo.ts';
import { idpRepo } from '../identity/idp/idp.repo.ts';
import { type Membership, membersRepo } from '../admin/members.repo.ts';
import { type DayFigures, homeRepo } from './home.repo.ts';

export type { RequestLogRow };
export type DashboardAction = Parameters<typeof membersRepo.recordAction>[1];
/** An action of a dashboard user, by whom: recordAction's fields less the entity and the user. */
export type ActionBy = { entity_id: string; user_id: string; user_email: string };

export class DashboardService {
  constructor(private readonly db: Db, private readonly reads: ReadRouter) {}

  /** The built-in first-party application the dashboard signs in with (its callback and origin kept current). */
  ensureApplication(clientId: string, callback: string, origin: string, name: string): Promise<void> {
    return idpRepo.ensureConsoleApp(this.db, clientId, callback, origin, name);
  }

  /** The user's email and memberships, when the account exists and is not blocked. */
  async activeUser(userId: string): Promise<{ email: string; memberships: Membership[] } | undefined> {
    const user = await idpRepo.user(this.db, userId);
    if (!user || user.blocked) return undefined;
    return { email: user.email, memberships: await membersRepo.membershipsOf(this.db, userId) };
  }

  /** Invitations whose link this user redeemed start now (team.service.ts, invite). */
  acceptRedeemed(userId: string): Promise<number> {
    return membersRepo.acceptRedeemed(this.db, userId);
  }

  /** Records an action of the dashboard (in `q`'s transaction when given); false when its form key was recorded already. */
  recordAction(a: DashboardAction, q: Queryable = this.db): Promise<boolean> {
    return membersRepo.recordAction(q, a);
  }

  /** Records an action that moves nothing and carries no form key. */
  recordPlain(by: ActionBy, action: string): Promise<boolean> {
    return this.recordAction({ ...by, action, payment_id: null, idempotency_key: null, amount: null });
  }

  /** Whether a form's key was recorded already (its action was done or is under way). */
  actionDone(entityId: string, key: string): Promise<boolean> {
    return membersRepo.actionDone(this.db, entityId, key);
  }

  /** The dashboard's actions on a payment (its timeline). */
  actionsOf(entityId: string, paymentId: string) {
    return membersRepo.actionsOf(this.db, entityId, paymentId);
  }

  /** The home page's figures: the entity's payments by day (in `zone`) and currency since a moment. */
  async daysSince(lag: number, entityId: string, zone: string, since: Date): Promise<DayFigures[]> {
    return (await this.reads.read(lag, (q) => homeRepo.daysSince(q, entityId, zone, since))) ?? [];
  }

  /** A page of the entity's request log, newest first: limit + 1 rows (the extra one says there are older ones). */
  requestLog(entityId: string, opts: { limit: number; before?: { at: string; id: string } | undefined; errorsOnly?: boolean }): Promise<RequestLogRow[]> {
    return requestLogRepo.page(this.db, entityId, opts);
  }
}
