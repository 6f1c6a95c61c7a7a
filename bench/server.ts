// The payd app as a benchmark target, plus baseline routes that exist only here:
// GET /bench/hello (no work), POST /bench/hello (a form body, no work), POST /bench/insert (one INSERT), GET /bench/select/:id
// (one SELECT by primary key). Prints {port, apiKey} on stdout once listening.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { idpRepo } from '../src/identity/idp/idp.repo.ts';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { openDb } from '../src/platform/db/index.ts';
import { migrate } from '../src/platform/db/migrator.ts';

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'payd-bench-'));
const config = loadConfig({ ...process.env, PAYD_DATA_DIR: dataDir, LOG_LEVEL: 'warn', PAYD_ADMIN_TOKEN: 'bench-admin-token-0123456789', PAYD_DB_POOL_SIZE: process.env.PAYD_DB_POOL_SIZE ?? '50' });
const db = await openDb(config);
await migrate(db);
await db.exec('CREATE TABLE IF NOT EXISTS bench_rows (id uuid PRIMARY KEY, entity_id uuid NOT NULL, amount bigint NOT NULL, data jsonb, created_at timestamptz NOT NULL DEFAULT now())');
const seedId = randomUUID();
await db.query('INSERT INTO bench_rows (id, entity_id, amount) VALUES ($1, $2, 1)', [seedId, randomUUID()]);

// A fixed master key: a rerun on the same database opens the keys the last run sealed.
const app = await buildApp({ config, db, masterKey: Buffer.alloc(32, 7), logger: false });
app.get('/bench/hello', async () => ({ hello: 'world' }));
// The same with a form body, to show what a POST with a body costs before any work.
app.post('/bench/hello', async (request) => ({ hello: (request.body as Record<string, string>).grant_type }));
app.post('/bench/insert', async () => {
  const id = randomUUID();
  await db.query('INSERT INTO bench_rows (id, entity_id, amount, data) VALUES ($1, $2, $3, $4)', [id, randomUUID(), 1000, JSON.stringify({ a: 1 })]);
  return { id };
});
app.get('/bench/select/:id', async (request) => {
  const { rows } = await db.query('SELECT id, entity_id, amount, data, created_at FROM bench_rows WHERE id = $1', [(request.params as { id: string }).id]);
  return rows[0];
});
// Identity: a bench-only route that mints authorization codes straight into the database
// (signing in through the page for each would bench the password hash, not the token
// endpoint), then a user and an application (after every route is added).
const idp = { clientId: '', userId: '' };
app.post('/bench/mint-codes', async (request) => {
  const n = Number((request.query as { n?: string }).n ?? 1000);
  const codes: string[] = [];
  for (let i = 0; i < n; i++) {
    const code = randomBytes(32).toString('base64url');
    codes.push(code);
    await idpRepo.insertCode(db, {
      code_hash: createHash('sha256').update(code).digest('hex'), client_id: idp.clientId, user_id: idp.userId,
      redirect_uri: 'https://bench.example/cb', scope: 'openid email', nonce: null, code_challenge: null, auth_time: new Date(),
    }, 600);
  }
  return { codes };
});
const admin = { authorization: `Bearer ${config.adminToken}` };
const idpUser = await app.inject({ method: 'POST', url: '/admin/v1/identity/users', headers: admin, payload: { email: 'bench@example.com', password: 'bench password 1234' } });
const idpApp = await app.inject({ method: 'POST', url: '/admin/v1/identity/applications', headers: admin, payload: {
  name: 'Bench', callback_urls: ['https://bench.example/cb'], management_scopes: ['read:users'],
} });
idp.clientId = idpApp.json().client_id;
idp.userId = idpUser.json().id;
const entity = await app.services.entities.create('Bench merchant');
const key = await app.services.entities.createApiKey(entity.id);
await app.listen({ port: 0, host: '127.0.0.1' });
const address = app.server.address();
console.log(JSON.stringify({ port: typeof address === 'object' && address ? address.port : 0, apiKey: key.api_key, seedId, idpClient: { id: idpApp.json().client_id, secret: idpApp.json().client_secret } }));

process.on('SIGTERM', () => {
  void app.close().then(() => db.close()).then(() => process.exit(0));
});
