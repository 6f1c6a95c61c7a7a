// The record of what dashboard users did (dashboard_actions, with the user's email), for
// the pages that act: their routes call this, not the repository. A form's key makes the
// record once (record() is false the second time), in the caller's transaction when given.
import type { Db, Queryable } from '../platform/db/index.ts';
import { membersRepo } from './members.repo.ts';

export interface DashboardActor { entityId: string; userId: string; email: string }

export class DashboardActionsService {
  constructor(private readonly db: Db) {}

  /** Records `action` by the user; with `key`, only once per key and entity (false: already recorded). */
  record(by: DashboardActor, action: string, opts: { key?: string; q?: Queryable } = {}): Promise<boolean> {
    return membersRepo.recordAction(opts.q ?? this.db, {
      entity_id: by.entityId, user_id: by.userId, user_email: by.email, action, payment_id: null, idempotency_key: opts.key ?? null, amount: null,
    });
  }
}
