// The rules a process keeps (eligibility/rules.service.ts; migrations/0054): a payment
// created through the API reads the entity's rules once, not on every call, and a change
// of the rules still holds at once in the process that made it and, through the
// database's notification, in another process sharing the database.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { createPgDb } from '../../src/platform/db/pg.ts';
import type { Db } from '../../src/platform/db/index.ts';
import { MASTER_KEY, createTestApp, expectProblem, type Merchant, type TestApp } from '../helpers/app.ts';
import { poll } from '../helpers/wait.ts';
import { setRules } from './helpers.ts';

const card = { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2031', cvv: '123' };
const payment = { amount: 1000, currency: 'EUR', split: [{ partner: 'card-sim', method: 'CARD', amount: 1000, instrument: card }] };
const noCards = [{ partner: 'card-sim', method: 'CARD', enabled: false }];

describe('eligibility rules kept by each process', () => {
  let t: TestApp;
  let m: Merchant;
  let db2: Db;
  let app2: FastifyInstance;
  before(async () => {
    // Rate limits and the request log off: their timers would add statements to the count below.
    t = await createTestApp({ rateLimitTokenPerKey: 0, rateLimitTokenPerAddress: 0, rateLimitApiPerKey: 0, requestLogPerSecond: 0 });
    m = await t.createMerchant('Kept rules');
    // A second app on the same database: on PostgreSQL through its own pool and LISTEN
    // connection (like a second process); on PGlite through the same embedded database.
    db2 = t.testDb.url ? createPgDb(t.testDb.url, 5) : t.testDb.db;
    app2 = await buildApp({ config: t.config, db: db2, masterKey: MASTER_KEY, logger: false });
    await app2.ready();
  });
  after(async () => {
    await app2.close();
    if (db2 !== t.testDb.db) await db2.close();
    await t.close();
  });

  const pay = (app: FastifyInstance) => app.inject({ method: 'POST', url: '/v2/payments', headers: m.auth, payload: payment });

  it('a creation reads the rules once: the next ones make no statement on eligibility_rules', async () => {
    assert.equal((await pay(t.app)).statusCode, 200);
    const db = t.testDb.db;
    const query = db.query.bind(db);
    const seen: string[] = [];
    db.query = ((...args: Parameters<typeof query>) => {
      seen.push(String(typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string }).text));
      return query(...args);
    }) as typeof db.query;
    try {
      for (let i = 0; i < 3; i++) assert.equal((await pay(t.app)).statusCode, 200);
    } finally {
      db.query = query;
    }
    assert.deepEqual(seen.filter((sql) => /eligibility_rules/.test(sql)), [], 'the rules were read again');
    // (Only counted by kind: on PGlite the second app's background passes share this database object.)
    assert.equal(seen.filter((sql) => /INSERT INTO payments/.test(sql)).length, 3, seen.join('\n'));
  });

  it('a change holds at once in the process that made it, and in the other process on the notification', async () => {
    // Both processes have read (and kept) the rules: none.
    assert.equal((await pay(t.app)).statusCode, 200);
    assert.equal((await pay(app2)).statusCode, 200);

    await setRules(t, m, noCards);
    expectProblem(await pay(t.app), 400);
    const refused = await poll(() => pay(app2), (r) => r.statusCode === 400, { everyMs: 25 });
    assert.equal(refused.statusCode, 400, 'the other process kept the old rules');
    assert.match(expectProblem(refused, 400).detail as string, /eligib/);

    await setRules(t, m, []);
    assert.equal((await pay(t.app)).statusCode, 200);
    const allowed = await poll(() => pay(app2), (r) => r.statusCode === 200, { everyMs: 25 });
    assert.equal(allowed.statusCode, 200, 'the other process kept the old rules');
  });
});
