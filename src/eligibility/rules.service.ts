// The operator's side of eligibility: read and replace an entity's rule set, and the
// rules the engine applies. Each process keeps the rules it read: a change (any write to
// eligibility_rules: a trigger, migrations/0054) is announced on a NOTIFY channel when it
// commits, and every listening process drops that entity's rules; the process that made
// the change drops them at once. Without the feed (started by app.ts) nothing is kept.
import type { Db } from '../platform/db/index.ts';
import type { PartnerRegistry } from '../partners/port.ts';
import { problems } from '../platform/http/problem.ts';
import type { Rule } from './eligibility.schemas.ts';
import { type RuleSetRow, rulesRepo } from './rules.repo.ts';
import { validateRules } from './rules.validate.ts';

/** NOTIFY channel carrying the id of each entity whose rules changed (migrations/0054). */
export const ELIGIBILITY_RULES_CHANNEL = 'payd_eligibility_rules';
/** A backstop: rules kept longer than this are read again, whatever the feed said. */
const KEPT_MS = 30_000;
const KEPT_MAX = 10_000;

export class EligibilityRulesService {
  /** Rules read, by entity; only while the feed listens. */
  private kept = new Map<string, { rules: Rule[]; at: number }>();
  /** Bumped by every change heard: a read that began before one is not kept. */
  private generation = 0;
  private unlisten: (() => Promise<void>) | undefined;

  constructor(
    private readonly db: Db,
    private readonly partners: PartnerRegistry,
  ) {}

  /** Listens for changes from every process; from then on, rules read are kept. */
  async startFeed(): Promise<void> {
    this.unlisten = await this.db.listen(ELIGIBILITY_RULES_CHANNEL, (entityId) => this.forget(entityId), () => this.forget());
  }

  async stopFeed(): Promise<void> {
    const stop = this.unlisten;
    this.unlisten = undefined;
    this.forget();
    await stop?.();
  }

  private forget(entityId?: string): void {
    this.generation++;
    if (entityId === undefined) this.kept.clear();
    else this.kept.delete(entityId);
  }

  async get(entityId: string): Promise<RuleSetRow> {
    const set = await rulesRepo.get(this.db, entityId);
    if (!set) throw problems.notFound(`Entity ${entityId} does not exist.`);
    return set;
  }

  /**
   * Validates the whole set first: a refused set changes nothing. With `expectedVersion`
   * (the dashboard's form), a set replaced by someone else since is refused with 409.
   */
  async put(entityId: string, rules: Rule[], expectedVersion?: number): Promise<RuleSetRow> {
    validateRules(rules, this.partners);
    const set = await rulesRepo.put(this.db, entityId, rules, expectedVersion);
    this.forget(entityId); // this process at once; the others on the notification
    if (set) return set;
    const current = await rulesRepo.get(this.db, entityId);
    if (!current) throw problems.notFound(`Entity ${entityId} does not exist.`);
    throw problems.conflict(`The rules were changed by someone else meanwhile (now version ${current.version}, this form was made from version ${expectedVersion}): reload them and apply your change again.`);
  }

  /** The rules the engine applies for an entity ([] when it has none). */
  async rulesOf(entityId: string): Promise<Rule[]> {
    const hit = this.kept.get(entityId);
    if (hit && performance.now() - hit.at < KEPT_MS) return hit.rules;
    const generation = this.generation;
    const rules = await rulesRepo.rules(this.db, entityId);
    if (this.unlisten && generation === this.generation) {
      if (this.kept.size >= KEPT_MAX) this.kept.delete(this.kept.keys().next().value!);
      this.kept.set(entityId, { rules, at: performance.now() });
    }
    return rules;
  }
}
