// SQL of eligibility rule sets (one row per entity; see migrations/0006_eligibility.sql).
import type { Queryable } from '../platform/db/index.ts';
import type { Rule } from './eligibility.schemas.ts';

export interface RuleSetRow {
  entity_id: string;
  rules: Rule[];
  version: number;
  updated_at: Date | null;
}

export const rulesRepo = {
  /**
   * The rule set of an entity: undefined when the entity does not exist, an empty set
   * (version 0) when it never had rules. Reads entities only to tell the two apart.
   */
  async get(q: Queryable, entityId: string): Promise<RuleSetRow | undefined> {
    const { rows } = await q.query<{ id: string; rules: Rule[] | null; version: number | null; updated_at: Date | null }>(
      `SELECT e.id, r.rules, r.version, r.updated_at
         FROM entities e LEFT JOIN eligibility_rules r ON r.entity_id = e.id
        WHERE e.id = $1`,
      [entityId],
    );
    const row = rows[0];
    if (!row) return undefined;
    return { entity_id: row.id, rules: row.rules ?? [], version: row.version ?? 0, updated_at: row.updated_at };
  },

  /** Only the rules (the engine's read on every call); [] when there are none. */
  async rules(q: Queryable, entityId: string): Promise<Rule[]> {
    const { rows } = await q.query<{ rules: Rule[] }>('SELECT rules FROM eligibility_rules WHERE entity_id = $1', [entityId]);
    return rows[0]?.rules ?? [];
  },

  /**
   * Replaces the rule set in one statement; undefined when the entity does not exist, or
   * when `expectedVersion` is given and the stored set is not that version (someone else
   * replaced it meanwhile: nothing written).
   */
  async put(q: Queryable, entityId: string, rules: Rule[], expectedVersion?: number): Promise<RuleSetRow | undefined> {
    const { rows } = await q.query<RuleSetRow>(
      `INSERT INTO eligibility_rules (entity_id, rules)
       SELECT id, $2::jsonb FROM entities
        WHERE id = $1 AND ($3::int IS NULL OR $3::int = 0 OR EXISTS (SELECT 1 FROM eligibility_rules WHERE entity_id = $1))
       ON CONFLICT (entity_id) DO UPDATE
          SET rules = EXCLUDED.rules, version = eligibility_rules.version + 1, updated_at = now()
        WHERE $3::int IS NULL OR eligibility_rules.version = $3::int
       RETURNING entity_id, rules, version, updated_at`,
      [entityId, JSON.stringify(rules), expectedVersion ?? null],
    );
    return rows[0];
  },
};
