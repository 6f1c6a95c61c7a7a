// Baselines for bench/throughput.ts: a minimal Fastify process on payd's database, with a
// pg pool of payd's default size (10), and routes of a few lines each:
//   GET  /hello               no work
//   POST /create              the rows payd writes for a card payment authorized inline,
//                             in one statement (one transaction): the payment, its
//                             authorization ledger row, its outbox event
//   POST /capture/:id         the rows payd writes for a capture answered inline, in one
//                             statement: the payment update (amount check in its WHERE),
//                             the operation, its ledger row, its outbox event
// Both store the request's x-idempotency-key (sent on every request, as the SDK does)
// under the unique indexes payd's tables have.
// The rows go to copies of payd's tables (CREATE TABLE ... LIKE, same columns, defaults,
// checks and indexes, and the foreign keys payd's tables have), without payd's triggers:
// the baseline writes the running totals itself, as plain SQL would. The event data and
// the answer are the JSON text of a real payd answer (POST /template sets it), so that
// the bytes written and sent are those of payd's.
// Prints {"port": n} on stdout once listening. Env: DATABASE_URL.
import { randomUUID } from 'node:crypto';
import Fastify from 'fastify';
import pg from 'pg';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
await pool.query(`
  CREATE TABLE IF NOT EXISTS bench_payments (LIKE payments INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING INDEXES) WITH (fillfactor = 70);
  ALTER TABLE bench_payments DROP CONSTRAINT IF EXISTS bench_payments_entity_fk;
  ALTER TABLE bench_payments ADD CONSTRAINT bench_payments_entity_fk FOREIGN KEY (entity_id) REFERENCES entities (id);
  CREATE TABLE IF NOT EXISTS bench_payment_operations (LIKE payment_operations INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING INDEXES,
    FOREIGN KEY (payment_id) REFERENCES bench_payments (id));
  CREATE TABLE IF NOT EXISTS bench_partner_transactions (LIKE partner_transactions INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING INDEXES,
    FOREIGN KEY (payment_id) REFERENCES bench_payments (id), FOREIGN KEY (operation_id) REFERENCES bench_payment_operations (id),
    FOREIGN KEY (parent_id) REFERENCES bench_partner_transactions (id));
  CREATE TABLE IF NOT EXISTS bench_webhook_events (LIKE webhook_events INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING INDEXES,
    FOREIGN KEY (entity_id) REFERENCES entities (id));
`);

let template: Record<string, unknown> = {};
const card = JSON.stringify({ brand: 'VISA', last4: '4242', expiry_month: '12', expiry_year: '2030', fingerprint: 'x'.repeat(43) });
const split = JSON.stringify([{ partner: 'card-sim', method: 'CARD', amount: 1 }]);
const order = JSON.stringify({ reference: 'bench' });

const app = Fastify({ logger: false });
app.get('/hello', async () => ({ hello: 'world' }));
app.post('/template', async (request) => {
  template = request.body as Record<string, unknown>;
  return {};
});

const CREATE = `WITH p AS (
    INSERT INTO bench_payments (id, entity_id, amount, currency, capture_mode, split, "order", order_reference, authorization_status, total_authorized, idempotency_key)
    VALUES ($1, $2, $3, 'EUR', 'MANUAL', $4, $5, 'bench', 'AUTHORIZED', $3, $12) RETURNING id),
  t AS (
    INSERT INTO bench_partner_transactions (id, payment_id, kind, seq, partner, method, amount, status, partner_key, partner_reference, partner_status, status_code, card)
    SELECT $6, p.id, 'AUTHORIZATION', 1, 'card-sim', 'CARD', $3, 'AUTHORIZED', $10, $11, 'AUTHORIZED', '000', $7 FROM p)
  INSERT INTO bench_webhook_events (id, entity_id, type, data) SELECT $8, $2, 'payment.authorized', $9 FROM p`;
app.post('/create', async (request, reply) => {
  const { amount, entity_id } = request.body as { amount: number; entity_id: string };
  const id = randomUUID();
  const text = JSON.stringify({ ...template, id, amount });
  await pool.query({ name: 'create', text: CREATE, values: [id, entity_id, amount, split, order, randomUUID(), card, randomUUID(), text, `${id}:1`, randomUUID(), request.headers['x-idempotency-key'] ?? null] });
  return reply.code(201).type('application/json').send(text);
});

const CAPTURE = `WITH u AS (
    UPDATE bench_payments SET version = version + 1, updated_at = now(), total_captured = total_captured + $2, operation_count = operation_count + 1
     WHERE id = $1 AND authorization_status = 'AUTHORIZED' AND total_authorized - total_captured - total_voided >= $2 RETURNING id, entity_id),
  o AS (
    INSERT INTO bench_payment_operations (id, payment_id, kind, amount, status, idempotency_key) SELECT $3, u.id, 'CAPTURE', $2, 'SUCCESS', $9 FROM u RETURNING id),
  t AS (
    INSERT INTO bench_partner_transactions (id, payment_id, operation_id, parent_id, kind, seq, partner, method, amount, status, partner_key, partner_reference, partner_status, status_code, card)
    SELECT $4, $1, o.id, a.id, 'CAPTURE', (SELECT max(seq) + 1 FROM bench_partner_transactions WHERE payment_id = $1), a.partner, a.method, $2, 'SUCCESS', $7, $8, 'CAPTURED', '000', a.card
      FROM o, bench_partner_transactions a WHERE a.payment_id = $1 AND a.seq = 1)
  INSERT INTO bench_webhook_events (id, entity_id, type, data) SELECT $5, u.entity_id, 'payment.captured', $6 FROM u RETURNING id`;
app.post('/capture/:id', async (request, reply) => {
  const { id } = request.params as { id: string };
  const { amount } = request.body as { amount: number };
  const text = JSON.stringify({ ...template, id });
  const opId = randomUUID();
  const { rowCount } = await pool.query({ name: 'capture', text: CAPTURE, values: [id, amount, opId, randomUUID(), randomUUID(), text, `${opId}:1`, randomUUID(), request.headers['x-idempotency-key'] ?? null] });
  return rowCount === 1 ? reply.code(201).type('application/json').send(text) : reply.code(400).send({ error: 'amount not available' });
});

await app.listen({ port: 0, host: '127.0.0.1' });
const address = app.server.address();
console.log(JSON.stringify({ port: typeof address === 'object' && address ? address.port : 0 }));
process.on('SIGTERM', () => {
  void app.close().then(() => pool.end()).then(() => process.exit(0));
});
