// Issue 43, item 8: a filtered list's first page costs the same whatever the value
// searched. On a seeded, analyzed entity (bench/lists-seed.ts), the statement each list
// filter runs (captured from the repositories, planned for its values as payd runs it)
// reads the filter's own index for a rare and for an absent value, never the entity's
// whole (entity_id, created_at) index with a filter over every row. On PostgreSQL, the
// list statements are not named (named ones get a generic plan after five runs).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createPgDb } from '../../src/platform/db/pg.ts';
import { CUSTOM_PLAN } from '../../src/platform/db/db.ts';
import { paymentListFilter, type PaymentListQueryT } from '../../src/payments/lists.routes.ts';
import { captured, LIST_FILTERS, runList, seedLists } from '../../bench/lists-seed.ts';
import { createTestDb, type TestDb } from '../helpers/db.ts';

const ENTITY = '4a1e0000-0000-4000-8000-000000000001';
const FORMAT = 'f';
const OTHER = '4a1e0000-0000-4000-8000-000000000002';
const CREATED_INDEX: Record<string, string> = {
  '/v2/payments': 'payments_entity_created_idx',
  '/v2/client-sessions': 'client_sessions_entity_created_idx',
  '/v2/payment-links': 'payment_links_entity_created_idx',
  '/v2/events': 'webhook_events_entity_idx',
  '/admin/v1/entities/{id}/webhook-events': 'webhook_events_entity_idx',
};

describe('list filter plans (issue 43, item 8)', () => {
  let t: TestDb;

  before(async () => {
    t = await createTestDb();
    await t.db.query(`INSERT INTO entities (id, name) VALUES ($1, 'Big shop'), ($2, 'Other shop')`, [ENTITY, OTHER]);
    await seedLists(t.db, ENTITY, 1, 20_000, FORMAT);
    await seedLists(t.db, OTHER, 1, 5_000, FORMAT);
    await t.db.exec('ANALYZE');
  });
  after(async () => t?.close());

  for (const c of LIST_FILTERS) {
    it(`${c.path}?${c.param}= reads ${c.index} for a rare and an absent value`, async () => {
      for (const value of new Set([c.rare, c.absent])) {
        const statements = await captured(t.db, (q) => runList(q, ENTITY, c, value, FORMAT));
        const page = statements[statements.length - 1]!;
        assert.ok(page.sql.startsWith(CUSTOM_PLAN), `the page's statement is planned for its values: ${page.sql}`);
        // EXPLAIN planned for these values, as the unnamed statement is.
        const { rows } = await t.db.query<Record<string, string>>(`${CUSTOM_PLAN}EXPLAIN ${page.sql.slice(CUSTOM_PLAN.length)}`, page.params);
        const plan = rows.map((r) => Object.values(r)[0]).join('\n');
        const label = `${c.param}=${value}:\n${plan}`;
        assert.match(plan, new RegExp(`(Index (Only )?Scan( Backward)?|Bitmap Index Scan) (using|on) ${c.index}\\b`), label);
        assert.doesNotMatch(plan, new RegExp(`\\b${CREATED_INDEX[c.path]}\\b`), label);
        assert.doesNotMatch(plan, /Seq Scan/, label);
      }
      // Common values answer too (their plan is the planner's choice: often the listing order itself).
      const common = await runList(t.db, ENTITY, c, c.common, FORMAT);
      assert.ok(Array.isArray(common) && common.length > 0, `${c.param}=${c.common} finds rows`);
    });
  }

  it('finds what a scan would find, for every value (the indexes change no answer)', async () => {
    for (const c of LIST_FILTERS.filter((x) => x.path === '/v2/payments')) {
      for (const value of [c.common, c.rare, c.absent]) {
        const rows = (await runList(t.db, ENTITY, c, value, FORMAT)) as Array<{ id: string }>;
        const f = paymentListFilter({ [c.param]: value } as PaymentListQueryT);
        // The same conditions without any index: a sequential scan of the table.
        await t.db.exec('SET enable_indexscan = off; SET enable_bitmapscan = off; SET enable_indexonlyscan = off');
        try {
          const where = [...f.where, `entity_id = $${f.params.length + 1}`].join(' AND ');
          const scanned = await t.db.query<{ id: string }>(`SELECT id FROM payments WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT 21`, [...f.params, ENTITY]);
          assert.deepEqual(rows.map((r) => r.id), scanned.rows.map((r) => r.id), `${c.param}=${value}`);
        } finally {
          await t.db.exec('RESET enable_indexscan; RESET enable_bitmapscan; RESET enable_indexonlyscan');
        }
      }
    }
  });

  it('runs the list statements unnamed on PostgreSQL (no generic plan after five runs)', async (ctx) => {
    if (!t.url) return ctx.diagnostic('PGlite: statements are never named');
    const one = createPgDb(t.url, 1);
    try {
      const c = LIST_FILTERS.find((x) => x.param === 'authorization_status')!;
      for (let i = 0; i < 7; i++) await runList(one, ENTITY, c, c.absent, FORMAT);
      const { rows } = await one.query<{ statement: string }>('SELECT statement FROM pg_prepared_statements WHERE name LIKE $1', ['payd\\_%']);
      assert.ok(rows.length > 0, 'other statements with parameters are named');
      assert.ok(rows.every((r) => !r.statement.includes(CUSTOM_PLAN.trim())), rows.map((r) => r.statement).join('\n'));
    } finally {
      await one.close();
    }
  });
});
