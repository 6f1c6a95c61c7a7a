// The dashboard's working tools (issue 43 item 3), through the real app: the CSV export of
// the list's search (the same filters, amounts in major and minor units, keyset pages,
// bounded, safe from spreadsheet formulas, one entity only), the merchant's time zone
// (validated, used for the dates shown, the home page's days and the date filters), the
// request log (recorded without bodies or credentials, flushed in batches, bounded per
// entity with errors kept first, 7 days of retention, admins of the entity only) and the
// void confirmation's text.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Merchant, TestApp } from '../helpers/app.ts';
import { hiddenFields } from '../identity/idp-helpers.ts';
import { createDashboardApp, createMembers, dashboardClient } from '../helpers/dashboard.ts';
import { csvCell, paymentsCsv } from '../../src/dashboard/dashboard.routes.ts';
import { addDays, dayIn, dayStart, validZone, when } from '../../src/dashboard/views.ts';
import { RequestLog } from '../../src/platform/observability/request-log.ts';
import { requestLogRepo } from '../../src/platform/observability/request-log.repo.ts';
import { paymentListFilter } from '../../src/payments/lists.routes.ts';
import type { PageRequest } from '../../src/payments/lists.repo.ts';
import { parseCsv } from '../helpers/csv.ts';

const CARD = { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2031', cvv: '123' };

describe('dashboard: export, time zone, request log', () => {
  let t: TestApp;
  let a: Merchant;
  let b: Merchant;
  let c: Merchant;
  const { signInAs, get, post } = dashboardClient(() => t);

  before(async () => {
    t = await createDashboardApp();
    a = await t.createMerchant('Work shop A');
    b = await t.createMerchant('Work shop B');
    c = await t.createMerchant('Work shop C');
    await createMembers(t, [[a, 'ada@work.example', 'admin'], [a, 'olga@work.example', 'operator'], [a, 'vic@work.example', 'viewer'], [b, 'bea@work.example', 'admin'], [c, 'cy@work.example', 'admin']]);
  });
  after(async () => {
    await t?.close();
  });

  const pay = async (m: Merchant, reference: string, amount: number, currency = 'EUR', headers: Record<string, string> = {}) => {
    const res = await t.app.inject({
      method: 'POST', url: '/v2/payments', headers: { ...m.auth, ...headers },
      payload: { amount, currency, capture_mode: 'MANUAL', order: { reference }, split: [{ partner: 'card-sim', method: 'CARD', amount, instrument: CARD }] },
    });
    assert.equal(res.statusCode, 200, res.body);
    return res.json() as { id: string; created_at: string };
  };

  it('exports the filtered list as CSV: the list\'s filters, major and minor units, formula-safe cells, one entity only', async () => {
    await pay(a, 'CSV-EUR-1', 1250);
    await pay(a, 'CSV-EUR-2', 99900);
    await pay(a, '=HYPERLINK("http://evil.example","x")', 500);
    await pay(a, '+1,2', 600);
    await pay(a, '@SUM(A1)', 700);
    await pay(a, '-5"quoted"', 800);
    const jpy = await pay(a, 'CSV-JPY-1', 1000, 'JPY');
    await pay(b, 'CSV-B-1', 1250);
    const ada = await signInAs('ada@work.example');

    const all = await get(ada, `/dashboard/${a.entityId}/payments.csv`);
    assert.equal(all.statusCode, 200, all.body);
    assert.equal(all.headers['content-type'], 'text/csv; charset=utf-8');
    assert.match(String(all.headers['content-disposition']), /^attachment; filename="payments-\d{4}-\d{2}-\d{2}\.csv"$/);
    assert.equal(all.headers['cache-control'], 'no-store');
    const rows = parseCsv(all.body);
    const header = rows[0]!;
    assert.deepEqual(header, ['id', 'created_at', 'created_local', 'time_zone', 'order_reference', 'status', 'methods', 'partners', 'currency',
      'amount', 'amount_minor', 'captured', 'captured_minor', 'refunded', 'refunded_minor', 'voided', 'voided_minor', 'card', 'customer_email']);
    const records = rows.slice(1).map((r) => Object.fromEntries(header.map((h, i) => [h, r[i]!])));
    assert.equal(records.length, 7, 'A\'s seven payments, not B\'s');
    assert.ok(!all.body.includes('CSV-B-1'));
    assert.ok(!all.body.includes('4242424242424242'), 'no card number');
    const byRef = (ref: string) => records.find((r) => r.order_reference === ref)!;
    assert.deepEqual({ ...byRef('CSV-EUR-1') }, { ...byRef('CSV-EUR-1'), amount: '12.50', amount_minor: '1250', currency: 'EUR', status: 'AUTHORIZED', methods: 'CARD', partners: 'card-sim', captured: '0.00', card: byRef('CSV-EUR-1').card });
    assert.match(byRef('CSV-EUR-1').card!, / 4242$/);
    assert.equal(byRef('CSV-EUR-2').amount, '999.00', 'no grouping separator in a CSV amount');
    assert.deepEqual([byRef('CSV-JPY-1').amount, byRef('CSV-JPY-1').amount_minor], ['1000', '1000'], 'JPY has no minor digits');
    assert.equal(byRef('CSV-JPY-1').id, jpy.id);
    assert.equal(byRef('CSV-JPY-1').created_at, new Date(jpy.created_at).toISOString());
    assert.equal(byRef('CSV-JPY-1').time_zone, 'UTC');
    // Formulas are text: the apostrophe before = + - @, and quoting for commas and quotes.
    assert.ok(records.some((r) => r.order_reference === `'=HYPERLINK("http://evil.example","x")`));
    assert.ok(all.body.includes(`"'=HYPERLINK(""http://evil.example"",""x"")"`));
    for (const ref of ["'+1,2", "'@SUM(A1)", `'-5"quoted"`]) assert.ok(records.some((r) => r.order_reference === ref), ref);
    assert.equal(csvCell('\tcmd'), "'\tcmd");
    assert.equal(csvCell('\rcmd'), `"'\rcmd"`);
    assert.equal(csvCell('plain'), 'plain');

    // The list's filters: an amount range in major units of the currency.
    const ranged = await get(ada, `/dashboard/${a.entityId}/payments.csv?currency=EUR&amount_min=10&amount_max=999.00`);
    assert.deepEqual(parseCsv(ranged.body).slice(1).map((r) => r[4]).sort(), ['CSV-EUR-1', 'CSV-EUR-2']);
    const yen = await get(ada, `/dashboard/${a.entityId}/payments.csv?currency=JPY&amount_min=1000`);
    assert.deepEqual(parseCsv(yen.body).slice(1).map((r) => r[4]), ['CSV-JPY-1']);
    // The list page shows the same range and links the export with its filters.
    const list = await get(ada, `/dashboard/${a.entityId}/payments?currency=EUR&amount_min=10&amount_max=999.00`);
    assert.match(list.body, /CSV-EUR-1/);
    assert.doesNotMatch(list.body, /CSV-JPY-1/);
    assert.match(list.body, /href="\/dashboard\/[0-9a-f-]+\/payments\.csv\?currency=EUR&amp;amount_min=10&amp;amount_max=999\.00" download>Download these payments \(CSV\)/);
    // Bad filters: the field named, nothing exported.
    const bad = await get(ada, `/dashboard/${a.entityId}/payments.csv?currency=JPY&amount_min=10.5`);
    assert.equal(bad.statusCode, 400);
    assert.match(bad.body, /Amount from: write it in JPY like 1000/);
    const noCurrency = await get(ada, `/dashboard/${a.entityId}/payments.csv?amount_max=10`);
    assert.equal(noCurrency.statusCode, 400);
    assert.match(noCurrency.body, /Amount to: choose the currency/);
    const inverted = await get(ada, `/dashboard/${a.entityId}/payments?currency=EUR&amount_min=20&amount_max=10`);
    assert.match(inverted.body, /Amount to must not be less than Amount from/);

    // Another entity's member: a 404, as for the pages.
    const bea = await signInAs('bea@work.example');
    assert.equal((await get(bea, `/dashboard/${a.entityId}/payments.csv`)).statusCode, 404);
    // A viewer may export (it is the list they see).
    const vic = await signInAs('vic@work.example');
    assert.equal((await get(vic, `/dashboard/${a.entityId}/payments.csv`)).statusCode, 200);
  });

  it('the export has the customer\'s email (empty without one), formula-safe like every cell', async () => {
    // A merchant of its own: the other tests count their merchants' payments.
    const d = await t.createMerchant('Work shop D');
    await createMembers(t, [[d, 'dee@work.example', 'viewer']]);
    const withCustomer = async (reference: string, customer?: Record<string, string>) => {
      const res = await t.app.inject({
        method: 'POST', url: '/v2/payments', headers: d.auth,
        payload: { amount: 1000, currency: 'EUR', capture_mode: 'MANUAL', order: { reference }, ...(customer ? { customer } : {}), split: [{ partner: 'card-sim', method: 'CARD', amount: 1000, instrument: CARD }] },
      });
      assert.equal(res.statusCode, 200, res.body);
    };
    await withCustomer('MAIL-1', { email: 'Ann.Buyer@shop.example' });
    await withCustomer('MAIL-NONE');
    await withCustomer('MAIL-REF-ONLY', { reference: 'cust-7' });
    await withCustomer('MAIL-FORMULA', { email: '=cmd@evil.example' });
    await withCustomer('MAIL-PLUS', { email: '+1@evil.example' });
    const dee = await signInAs('dee@work.example');
    const res = await get(dee, `/dashboard/${d.entityId}/payments.csv`);
    assert.equal(res.statusCode, 200, res.body);
    const rows = parseCsv(res.body);
    const at = rows[0]!.indexOf('customer_email');
    assert.equal(at, rows[0]!.length - 1, 'the last column: the others keep their places');
    const emailOf = (ref: string) => rows.find((r) => r[4] === ref)![at];
    assert.equal(emailOf('MAIL-1'), 'Ann.Buyer@shop.example', 'as the payment has it');
    assert.equal(emailOf('MAIL-NONE'), '');
    assert.equal(emailOf('MAIL-REF-ONLY'), '');
    assert.equal(emailOf('MAIL-FORMULA'), "'=cmd@evil.example");
    assert.equal(emailOf('MAIL-PLUS'), "'+1@evil.example");
    assert.ok(rows.slice(1).every((r) => r.length === rows[0]!.length), 'every line has every column');
  });

  it('the export reads keyset pages of the list\'s query and stops at its bound', async () => {
    const filter = { currency: 'EUR' };
    const where = paymentListFilter(filter);
    const reads: Array<string | undefined> = [];
    const read = async (req: PageRequest) => {
      reads.push(req.after);
      return t.app.services.payments.listStoredJson(a.entityId, req, where, t.testDb.db);
    };
    const collect = async (opts: { pageSize: number; max?: number }) => {
      const out: string[] = [];
      for await (const chunk of paymentsCsv(read, filter, 'UTC', opts)) out.push(chunk);
      return parseCsv(out.join('')).slice(1).map((r) => r[0]!);
    };
    const whole = await collect({ pageSize: 1000 });
    assert.equal(whole.length, 6, 'A\'s six EUR payments');
    reads.length = 0;
    const paged = await collect({ pageSize: 2 });
    assert.deepEqual(paged, whole, 'pages of 2 give the same rows in the same order');
    assert.deepEqual(reads, [undefined, whole[1], whole[3]], 'each page after the last id of the one before');
    reads.length = 0;
    assert.deepEqual(await collect({ pageSize: 2, max: 3 }), whole.slice(0, 3), 'at most max rows');
    assert.equal(reads.length, 2);
  });

  it('the time zone: validated, saved by admins, used for the dates shown, the home page\'s days and the date filters', async () => {
    assert.equal(validZone('Europe/Paris'), 'Europe/Paris');
    assert.equal(validZone('Mars/Olympus'), undefined);
    assert.equal(validZone('../etc/passwd'), undefined);
    assert.equal(when('2026-07-01T10:05:00Z', 'Europe/Paris'), '2026-07-01 12:05 UTC+02:00');
    assert.equal(when('2026-01-01T10:05:00Z', 'America/St_Johns'), '2026-01-01 06:35 UTC-03:30');
    assert.equal(when('2026-01-01T10:05:00Z', 'UTC'), '2026-01-01 10:05 UTC');
    assert.equal(dayStart('2026-03-29', 'Europe/Paris').toISOString(), '2026-03-28T23:00:00.000Z');
    assert.equal(dayStart('2026-10-25', 'Europe/Paris').toISOString(), '2026-10-24T22:00:00.000Z');
    assert.equal(dayStart('2026-11-27', 'Asia/Tokyo').toISOString(), '2026-11-26T15:00:00.000Z');

    const cy = await signInAs('cy@work.example');
    const team = await get(cy, `/dashboard/${c.entityId}/team`);
    const csrf = hiddenFields(team.body).get('csrf')!;
    const refused = await post(cy, `/dashboard/${c.entityId}/team/time-zone`, { csrf, time_zone: 'Mars/Olympus' });
    assert.equal(refused.statusCode, 400);
    assert.match(refused.body, /Time zone: &quot;Mars\/Olympus&quot; is not a time zone name/);
    assert.match(refused.body, /value="Mars\/Olympus"/, 'the draft kept');
    // Operators cannot change it; nor can another entity's admin.
    const olga = await signInAs('olga@work.example');
    assert.equal((await post(olga, `/dashboard/${a.entityId}/team/time-zone`, { csrf: hiddenFields((await get(olga, `/dashboard/${a.entityId}/payments`)).body).get('csrf')!, time_zone: 'Asia/Tokyo' })).statusCode, 403);
    assert.equal((await post(cy, `/dashboard/${a.entityId}/team/time-zone`, { csrf, time_zone: 'Asia/Tokyo' })).statusCode, 404);

    // A payment at 00:30 today in Tokyo: yesterday in UTC.
    const zone = 'Asia/Tokyo';
    const todayTokyo = dayIn(Date.now(), zone);
    const early = new Date(dayStart(todayTokyo, zone).getTime() + 30 * 60_000);
    const p = await pay(c, 'TOKYO-EARLY', 4200);
    await t.testDb.db.query('UPDATE payments SET created_at = $2 WHERE id = $1', [p.id, early]);
    const chartRow = (html: string, day: string) => new RegExp(`<tr><td>${day}</td><td>([^<]+)</td></tr>`).exec(html)?.[1];
    const homeUtc = await get(cy, `/dashboard/${c.entityId}`);
    assert.equal(chartRow(homeUtc.body, addDays(todayTokyo, -1)), '42.00 EUR', 'in UTC the payment is of the day before');
    assert.match(homeUtc.body, /days in UTC/);

    const saved = await post(cy, `/dashboard/${c.entityId}/team/time-zone`, { csrf, time_zone: 'Asia/Tokyo' });
    assert.equal(saved.statusCode, 303, saved.body);
    assert.match((await get(cy, String(saved.headers.location))).body, /The time zone is saved: Asia\/Tokyo/);
    const home = await get(cy, `/dashboard/${c.entityId}`);
    assert.equal(chartRow(home.body, todayTokyo), '42.00 EUR', 'in Tokyo it is of today');
    assert.match(home.body, /days in Asia\/Tokyo/);
    assert.match(home.body, /Volume authorised today<\/p><p class="value">42\.00 EUR/);
    const detail = await get(cy, `/dashboard/${c.entityId}/payments/${p.id}`);
    assert.ok(detail.body.includes(`<dt>Created</dt><dd>${todayTokyo} 00:30 UTC+09:00</dd>`), 'the date shown in Tokyo');
    // Date filters are the merchant's days.
    assert.match((await get(cy, `/dashboard/${c.entityId}/payments?from=${todayTokyo}&to=${todayTokyo}`)).body, /TOKYO-EARLY/);
    assert.doesNotMatch((await get(cy, `/dashboard/${c.entityId}/payments?from=${addDays(todayTokyo, -1)}&to=${addDays(todayTokyo, -1)}`)).body, /TOKYO-EARLY/);
    const csv = parseCsv((await get(cy, `/dashboard/${c.entityId}/payments.csv?from=${todayTokyo}`)).body);
    assert.deepEqual(csv[1]!.slice(2, 5), [`${todayTokyo} 00:30:00`, 'Asia/Tokyo', 'TOKYO-EARLY']);
    const recorded = await t.testDb.db.query<{ action: string }>('SELECT action FROM dashboard_actions WHERE entity_id = $1', [c.entityId]);
    assert.deepEqual(recorded.rows.map((r) => r.action), ['Set the time zone to Asia/Tokyo']);
    // Another entity keeps its own zone.
    assert.ok((await get(await signInAs('ada@work.example'), `/dashboard/${a.entityId}`)).body.includes('days in UTC'));
  });

  it('the request log: calls recorded without bodies or credentials, seen by the entity\'s admins only', async () => {
    const key = `log-key-${Date.now()}`;
    const p = await pay(a, 'LOGGED-1', 1500, 'EUR', { 'x-idempotency-key': key });
    const refused = await t.app.inject({ method: 'POST', url: '/v2/payments?secret=in-the-query', headers: a.auth, payload: { amount: -1, currency: 'EUR', split: [] } });
    assert.equal(refused.statusCode, 400);
    assert.equal((await t.app.inject({ url: `/v2/payments/${p.id}`, headers: a.auth })).statusCode, 200);
    await pay(b, 'LOGGED-B', 1500, 'EUR', { 'x-idempotency-key': 'b-key-never-shown-to-a' });
    await t.app.inject({ url: '/admin/v1/entities', headers: t.adminHeaders }); // the operator's calls are not the merchant's
    await t.app.requestLog.flush();

    const rows = (await t.testDb.db.query<Record<string, unknown>>(`SELECT * FROM api_request_log WHERE entity_id = $1 ORDER BY created_at, id`, [a.entityId])).rows;
    const created = rows.find((r) => r.idempotency_key === key)!;
    assert.deepEqual([created.method, created.route, created.status], ['POST', '/v2/payments', 200]);
    assert.ok(rows.some((r) => r.route === '/v2/payments/:id' && r.method === 'GET'));
    const bad = rows.find((r) => r.status === 400)!;
    assert.equal(bad.route, '/v2/payments');
    assert.equal(bad.request_id, refused.headers['x-request-id']);
    const text = JSON.stringify(rows);
    for (const secret of ['4242424242424242', 'in-the-query', a.token, a.apiKey]) assert.ok(!text.includes(secret), `never ${secret.slice(0, 12)}`);
    assert.ok(!rows.some((r) => String(r.route).startsWith('/admin')));

    const ada = await signInAs('ada@work.example');
    const page = await get(ada, `/dashboard/${a.entityId}/requests`);
    assert.equal(page.statusCode, 200, page.body);
    assert.ok(page.body.includes(`<code>${key}</code>`));
    assert.ok(page.body.includes(`<code>${String(refused.headers['x-request-id'])}</code>`));
    assert.match(page.body, /<code>\/v2\/payments\/:id<\/code>/);
    assert.doesNotMatch(page.body, /b-key-never-shown-to-a/, 'B\'s calls are not A\'s');
    assert.doesNotMatch(page.body, /in-the-query/);
    const errors = await get(ada, `/dashboard/${a.entityId}/requests?errors=1`);
    assert.ok(errors.body.includes(String(refused.headers['x-request-id'])));
    assert.ok(!errors.body.includes(`<code>${key}</code>`), 'errors only');
    // Admins of the entity only.
    assert.equal((await get(await signInAs('olga@work.example'), `/dashboard/${a.entityId}/requests`)).statusCode, 403);
    const bea = await signInAs('bea@work.example');
    assert.equal((await get(bea, `/dashboard/${a.entityId}/requests`)).statusCode, 404);
    const own = await get(bea, `/dashboard/${b.entityId}/requests`);
    assert.match(own.body, /b-key-never-shown-to-a/);
    assert.doesNotMatch(own.body, new RegExp(key));
  });

  it('the request log pages by keyset, keeps errors first past its bound, and deletes what is older than 7 days', async () => {
    const entity = c.entityId;
    const base = Date.parse('2026-01-10T12:00:00.000Z');
    const entry = (i: number, status = 200, at = base + i * 1000) => ({
      entity_id: entity, created_at: new Date(at).toISOString(), method: 'GET', route: '/v2/payments/:id', status, duration_ms: 3, request_id: `req-${i}`, idempotency_key: null, api_key_id: null,
    });
    // Bounded: 3 a flush; a 4th and 5th success are not kept, an error replaces the oldest success.
    let dropped = 0;
    const log = new RequestLog(t.testDb.db, { perSecond: 3, onDropped: () => dropped++, now: () => base + 10 * 86_400_000 });
    for (let i = 0; i < 5; i++) log.record(entry(i));
    log.record(entry(5, 502));
    assert.equal(dropped, 3);
    await log.flush();
    const kept = await t.testDb.db.query<{ request_id: string }>(`SELECT request_id FROM api_request_log WHERE entity_id = $1 AND request_id LIKE 'req-%' ORDER BY request_id`, [entity]);
    assert.deepEqual(kept.rows.map((r) => r.request_id), ['req-1', 'req-2', 'req-5']);
    // Pages of 2, newest first, by (created_at, id), with rows at the same millisecond.
    await requestLogRepo.insert(t.testDb.db, [entry(10, 200, base + 3000), entry(11, 200, base + 3000)]);
    const seen: string[] = [];
    let before: { at: string; id: string } | undefined;
    for (;;) {
      const rows = await requestLogRepo.page(t.testDb.db, entity, { limit: 2, before });
      seen.push(...rows.slice(0, 2).map((r) => r.request_id));
      if (rows.length <= 2) break;
      before = { at: rows[1]!.created_at, id: rows[1]!.id };
    }
    assert.deepEqual(seen.filter((s) => s.startsWith('req-')), ['req-5', 'req-11', 'req-10', 'req-2', 'req-1']);
    // Through the page: the Older link carries the cursor.
    const cy = await signInAs('cy@work.example');
    const first = await get(cy, `/dashboard/${entity}/requests`);
    assert.match(first.body, /req-5/);
    // Retention: on 2026-01-20 the calls of 2026-01-10 are older than 7 days; newer ones stay.
    await requestLogRepo.insert(t.testDb.db, [entry(20, 200, base + 5 * 86_400_000)]);
    assert.equal(await log.deleteExpired(), 5);
    const left = await t.testDb.db.query<{ request_id: string }>(`SELECT request_id FROM api_request_log WHERE entity_id = $1 AND request_id LIKE 'req-%'`, [entity]);
    assert.deepEqual(left.rows.map((r) => r.request_id), ['req-20']);
  });

  it('a request log whose database is away says so once, drops those calls, and says when it writes again', async () => {
    let down = true;
    const db = { query: (sql: string, params?: unknown[]) => (down ? Promise.reject(new Error('connect ECONNREFUSED')) : t.testDb.db.query(sql, params)) } as unknown as typeof t.testDb.db;
    const said: string[] = [];
    const log = new RequestLog(db, { perSecond: 10, onError: () => said.push('error'), onRecovered: (n) => said.push(`back after ${n}`) });
    const entry = (id: string) => ({ entity_id: c.entityId, created_at: new Date().toISOString(), method: 'GET', route: '/v2/payments', status: 200, duration_ms: 1, request_id: id, idempotency_key: null, api_key_id: null });
    for (let i = 0; i < 3; i++) {
      log.record(entry(`away-${i}`));
      await log.flush();
    }
    assert.deepEqual(said, ['error'], 'one line for the whole outage');
    down = false;
    log.record(entry('back-1'));
    await log.flush();
    assert.deepEqual(said, ['error', 'back after 3']);
    const rows = await t.testDb.db.query<{ request_id: string }>(`SELECT request_id FROM api_request_log WHERE request_id LIKE 'away-%' OR request_id = 'back-1'`);
    assert.deepEqual(rows.rows.map((r) => r.request_id), ['back-1'], 'what failed is dropped, not kept in memory');
  });

  it('the void confirmation names the amount it releases', async () => {
    const p = await pay(a, 'VOID-ME', 12000);
    const olga = await signInAs('olga@work.example');
    const detail = await get(olga, `/dashboard/${a.entityId}/payments/${p.id}`);
    const form = /<form method="post" action="([^"]+\/void)"[^]*?<\/form>/.exec(detail.body)!;
    const fields = hiddenFields(form[0]);
    const confirm = await post(olga, form[1]!, Object.fromEntries(fields));
    assert.equal(confirm.statusCode, 200, confirm.body);
    assert.match(confirm.body, /<h1>Void 120\.00 EUR\?<\/h1>/);
    assert.match(confirm.body, /Void the 120\.00 EUR not captured of payment VOID-ME\? This moves money at the partner and cannot be undone here\./);
    assert.match(confirm.body, /<button type="submit" class="danger">Yes, void<\/button>/);
  });
});
