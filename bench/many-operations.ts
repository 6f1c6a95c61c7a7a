// Many operations on one payment (payd issue 12, item 7): time and bytes of a capture
// early in a payment's life against one late in it, on the same payment, printed as
// ratios. A payment of BENCH_OPS + 1 cents is captured one cent at a time.
//
//   node --import tsx bench/many-operations.ts            (PGlite, in memory)
//   DATABASE_URL=postgres://... node --import tsx bench/many-operations.ts
//
// Env: BENCH_OPS (default 1000: the captures made), BENCH_WINDOW (default 10: captures
// averaged around each measured one), PAYD_SIM_INLINE (default true: partners answer
// inline; false: the locked path with partner calls).
import { createTestApp } from '../test/helpers/app.ts';

const ops = Number(process.env.BENCH_OPS ?? 1000);
const window = Number(process.env.BENCH_WINDOW ?? 10);
const inline = (process.env.PAYD_SIM_INLINE ?? 'true') !== 'false';
const marks = [...new Set([10, 100, ops].filter((k) => k <= ops && k >= window))];

const t = await createTestApp({ maxOperationsPerPayment: Math.max(ops, 50), simInline: inline } as never);
const m = await t.createMerchant('Bench many operations');
const card = { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2031', cvv: '123' };
const created = await t.app.inject({
  method: 'POST', url: '/v2/payments', headers: m.auth,
  payload: { amount: ops + 1, currency: 'EUR', order: { reference: 'bench-many' }, split: [{ partner: 'card-sim', method: 'CARD', amount: ops + 1, instrument: card }] },
});
if (created.statusCode !== 200) throw new Error(created.body);
const id = created.json().id as string;

// Warm-up on another payment (JIT, statement caches), so that capture #10 is not measured cold.
const warm = (await t.app.inject({
  method: 'POST', url: '/v2/payments', headers: m.auth,
  payload: { amount: 100, currency: 'EUR', split: [{ partner: 'card-sim', method: 'CARD', amount: 100, instrument: card }] },
})).json().id as string;
for (let k = 0; k < 50; k++) await t.app.inject({ method: 'POST', url: `/v2/payments/${warm}/captures`, headers: m.auth, payload: { amount: 1 } });

interface Sample { ms: number; answer: number; event: number }
const samples: Sample[] = [];
for (let k = 1; k <= ops; k++) {
  const start = process.hrtime.bigint();
  const res = await t.app.inject({ method: 'POST', url: `/v2/payments/${id}/captures`, headers: m.auth, payload: { amount: 1 } });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (res.statusCode !== 200) throw new Error(`capture #${k}: ${res.statusCode} ${res.body}`);
  const opId = String(res.headers['x-created-operation-id']);
  const ev = await t.testDb.db.query<{ n: number }>(
    `SELECT octet_length(data::text)::int AS n FROM webhook_events WHERE entity_id = $1 AND data->>'operation_id' = $2`, [m.entityId, opId]);
  samples.push({ ms, answer: res.body.length, event: ev.rows[0]?.n ?? 0 });
  if (k % 100 === 0) process.stderr.write(`  ${k} captures, last ${ms.toFixed(1)} ms\n`);
}

const around = (k: number) => samples.slice(k - window, k); // captures #k-window+1 .. #k
const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
const row = (k: number) => {
  const s = around(k);
  return { k, ms: mean(s.map((x) => x.ms)), answer: s[s.length - 1]!.answer, event: s[s.length - 1]!.event };
};
const total = await t.testDb.db.query<{ bytes: number; stored: number; n: number }>(
  `SELECT coalesce(sum(octet_length(data::text)), 0)::bigint AS bytes, coalesce(sum(pg_column_size(data)), 0)::bigint AS stored, count(*)::int AS n
     FROM webhook_events WHERE entity_id = $1 AND data->>'id' = $2`, [m.entityId, id]);
const get = await t.app.inject({ url: `/v2/payments/${id}`, headers: { ...m.auth, 'cache-control': 'max-age=0' } });

const first = row(marks[0]!);
console.log(`many-operations: ${ops} one-cent captures of one payment, ${t.testDb.url ? 'PostgreSQL' : 'PGlite'}, partners ${inline ? 'inline' : 'called'}`);
console.log('capture #   ms (mean of last ' + window + ')   answer bytes   event bytes   ms ratio   event ratio');
for (const k of marks) {
  const r = row(k);
  console.log(`${String(k).padStart(9)}   ${r.ms.toFixed(2).padStart(20)}   ${String(r.answer).padStart(12)}   ${String(r.event).padStart(11)}   ${(r.ms / first.ms).toFixed(2).padStart(8)}   ${(r.event / first.event).toFixed(2).padStart(11)}`);
}
console.log(`events of the payment: ${total.rows[0]!.n}, ${(total.rows[0]!.bytes / 1e6).toFixed(2)} MB of JSON text (${(total.rows[0]!.stored / 1e6).toFixed(2)} MB stored)`);
console.log(`GET /v2/payments/{id}: ${get.body.length} bytes`);
await t.close();
