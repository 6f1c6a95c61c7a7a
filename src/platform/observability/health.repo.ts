// SQL of readiness (and of start-up's check that the database is reached): one ping.
import type { Queryable } from '../db/index.ts';

export const healthRepo = {
  /** The cheapest statement: resolves when the database answers, rejects when it does not. */
  ping(q: Queryable): Promise<unknown> {
    return q.query('SELECT 1');
  },
};
