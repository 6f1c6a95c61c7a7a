// The operator's side of eligibility: read and replace an entity's rule set. The rules
// are read from the database on every eligibility call (no cache), so a change is seen
// at once by every payd process.
import type { Db } from '../platform/db/index.ts';
import type { PartnerRegistry } from '../partners/port.ts';
import { problems } from '../platform/http/problem.ts';
import type { Rule } from './eligibility.schemas.ts';
import { type RuleSetRow, rulesRepo } from './rules.repo.ts';
import { validateRules } from './rules.validate.ts';

export class EligibilityRulesService {
  constructor(
    private readonly db: Db,
    private readonly partners: PartnerRegistry,
  ) {}

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
    if (set) return set;
    const current = await rulesRepo.get(this.db, entityId);
    if (!current) throw problems.notFound(`Entity ${entityId} does not exist.`);
    throw problems.conflict(`The rules were changed by someone else meanwhile (now version ${current.version}, this form was made from version ${expectedVersion}): reload them and apply your change again.`);
  }

  /** The rules the engine applies for an entity ([] when it has none). */
  async rulesOf(entityId: string): Promise<Rule[]> {
    return rulesRepo.rules(this.db, entityId);
  }
}
