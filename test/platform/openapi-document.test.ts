// The OpenAPI document, ready for code generation (issue 18): committed as openapi.json
// at the repository root, equal to what a running payd serves, and clean under
// `redocly lint` (recommended rules). When a route changes, write the file anew with
// `npm run openapi` and commit it with the change.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { OPERATION_IDS } from '../../src/openapi/openapi-finish.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const committedPath = `${root}openapi.json`;
/** The servers entry of the committed document (a served one names its own PAYD_BASE_URL). */
const SERVERS = [{ url: 'http://localhost:3000', description: 'payd started with its defaults (set PAYD_BASE_URL for yours)' }];

describe('the OpenAPI document', () => {
  let t: TestApp;
  let doc: Record<string, any>;
  before(async () => {
    t = await createTestApp();
    doc = (await t.app.inject({ url: '/openapi.json' })).json();
    doc.servers = SERVERS;
    if (process.env.PAYD_WRITE_OPENAPI === '1') writeFileSync(committedPath, `${JSON.stringify(doc, null, 2)}\n`);
  });
  after(() => t.close());

  it('is the committed openapi.json (run `npm run openapi` after changing a route)', () => {
    const committed = JSON.parse(readFileSync(committedPath, 'utf8'));
    assert.deepEqual(doc, committed, 'openapi.json differs from the served document: run `npm run openapi` and commit openapi.json');
  });

  it('names every operation with a unique operationId from the table, and every request body', () => {
    const ids: string[] = [];
    const unnamed: string[] = [];
    for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        const key = `${method.toUpperCase()} ${path}`;
        if (OPERATION_IDS[key] !== op.operationId) unnamed.push(`${key} (${op.operationId})`);
        ids.push(op.operationId);
        for (const media of Object.values<any>(op.requestBody?.content ?? {})) assert.ok(media.schema.$ref, `${key}: request body is a named schema`);
        assert.ok(Object.keys(op.responses).some((c) => /^[23]/.test(c)), `${key}: has a success response`);
        assert.ok(Array.isArray(op.security), `${key}: states its security (an empty list when public)`);
        for (const response of Object.values<any>(op.responses)) assert.ok(response.headers?.['x-request-id'], `${key}: x-request-id declared`);
      }
    }
    assert.deepEqual(unnamed, [], 'every operation is in OPERATION_IDS (src/openapi/openapi-finish.ts)');
    assert.equal(new Set(ids).size, ids.length);
    assert.equal(doc.paths['/v2/payments/{id}/captures'].post.responses['200'].headers['x-created-operation-id'].$ref, '#/components/headers/CreatedOperationId');
    assert.equal(doc.paths['/v2/payments'].post.responses['503'].headers['retry-after'].$ref, '#/components/headers/RetryAfter');
  });

  it('writes every closed set of strings in one form, { type: string, enum: [...] } (StringEnum), never const or a union of one-value enums', () => {
    const odd: string[] = [];
    const walk = (x: unknown, at: string): void => {
      if (Array.isArray(x)) return x.forEach((y, i) => walk(y, `${at}/${i}`));
      if (!x || typeof x !== 'object') return;
      const o = x as Record<string, any>;
      if ('const' in o) odd.push(`${at}: const`);
      if (Array.isArray(o.enum) && typeof o.type !== 'string') odd.push(`${at}: enum without its type`);
      for (const k of ['anyOf', 'oneOf']) {
        if (Array.isArray(o[k]) && o[k].filter((m: any) => m && (Array.isArray(m.enum) || 'const' in m)).length > 1) odd.push(`${at}: ${k} of enums`);
      }
      for (const [k, v] of Object.entries(o)) if (k !== 'examples' && k !== 'example') walk(v, `${at}/${k}`);
    };
    walk(doc, '#');
    assert.deepEqual(odd, [], 'write closed sets with StringEnum (src/platform/http/schemas.ts), not Type.Literal unions or Type.Enum');
  });

  it('declares every tag it uses, once, with a description', () => {
    const declared = (doc.tags as Array<{ name: string; description?: string }>).map((t) => t.name);
    assert.equal(new Set(declared).size, declared.length, `tags declared once: ${declared.join(', ')}`);
    for (const t of doc.tags) assert.ok(t.description, `tag ${t.name} has a description`);
    const used = new Set<string>();
    for (const section of [doc.paths, doc.webhooks]) {
      for (const item of Object.values<Record<string, any>>(section)) for (const op of Object.values<any>(item)) for (const tag of op.tags ?? []) used.add(tag);
    }
    assert.deepEqual([...used].filter((t) => !declared.includes(t)), [], 'used tags not declared (src/openapi/openapi.ts)');
  });

  it('gives an example for every request body', () => {
    const missing: string[] = [];
    for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        for (const [type, media] of Object.entries<any>(op.requestBody?.content ?? {})) {
          const schema = media.schema.$ref ? doc.components.schemas[media.schema.$ref.split('/').pop()] : media.schema;
          if (!media.examples && media.example === undefined && !schema?.examples) missing.push(`${method.toUpperCase()} ${path} (${type})`);
        }
      }
    }
    assert.deepEqual(missing, [], 'add them to EXAMPLES (src/openapi/openapi-finish.ts)');
  });


  it('describes x-idempotency-key as its pattern is: no space (not "printable ASCII", which includes it)', () => {
    const wrong: string[] = [];
    for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        for (const p of op.parameters ?? []) {
          if (p.name !== 'x-idempotency-key') continue;
          const refusesSpace = !new RegExp(p.schema.pattern).test('a b');
          const saysSo = /no space/.test(p.description ?? '') && !/printable/.test(p.description ?? '');
          if (!refusesSpace || !saysSo) wrong.push(`${method.toUpperCase()} ${path}`);
        }
      }
    }
    assert.deepEqual(wrong, []);
  });
  it('gives status fields as enums, and Problem lists the members payd sends', () => {
    const s = doc.components.schemas;
    assert.deepEqual(s.Payment.properties.authorization.properties.status.enum, ['AUTHORIZED', 'REFUSED', 'ERROR', 'PENDING']);
    assert.deepEqual(s.Operation.properties.status.enum, ['SUCCESS', 'FAILURE', 'PENDING', 'CONFLICT']);
    assert.deepEqual(s.ClientSession.properties.status.enum, ['CREATED', 'SUBMITTED', 'ABORTED_BY_MERCHANT', 'EXPIRED']);
    assert.deepEqual(s.PaymentLink.properties.status.enum, ['CREATED', 'PAID', 'CANCELLED', 'EXPIRED']);
    for (const member of ['invalid_params', 'resource_id', 'available_amount', 'max_operations', 'request_id']) assert.ok(s.Problem.properties[member], member);
  });

  it('has request examples that payd accepts as they are', async () => {
    const m = await t.createMerchant('Examples shop');
    const ex = (path: string, method = 'post') => Object.entries<{ value: unknown }>(doc.paths[path][method].requestBody.content['application/json'].examples);
    let paymentId = '';
    let n = 0;
    const post = async (url: string, body: unknown) => {
      const res = await t.app.inject({ method: 'POST', url, headers: { ...m.auth, 'x-idempotency-key': `example-${++n}` }, payload: body as Record<string, unknown> });
      assert.equal(res.statusCode, 200, `${url}: ${res.body}`);
      return res.json();
    };
    let savedCardId = '';
    for (const [name, e] of ex('/v2/payments')) {
      // The saved-card examples name an id of the docs: the one the saveCard example made stands in for it.
      const body = savedCardId ? JSON.parse(JSON.stringify(e.value).replace(/"saved_card_id":"[0-9a-f-]{36}"/, `"saved_card_id":"${savedCardId}"`)) : e.value;
      const p = await post('/v2/payments', body);
      if (name === 'card') paymentId = p.id;
      if (name === 'saveCard') savedCardId = p.authorization.partner_transactions[0].saved_card_id;
      if (name.startsWith('savedCard')) assert.equal(p.authorization.partner_transactions[0].saved_card_id, savedCardId);
      if (name === 'declined') assert.equal(p.authorization.status, 'REFUSED');
      if (name === 'challenge') assert.ok(p.authorization.redirection);
    }
    for (const suffix of ['captures', 'refunds', 'voids']) {
      for (const [, e] of ex(`/v2/payments/{id}/${suffix}`)) await post(`/v2/payments/${paymentId}/${suffix}`, e.value);
    }
    for (const [, e] of ex('/v2/client-sessions')) await post('/v2/client-sessions', e.value);
    for (const [, e] of ex('/v2/payment-links')) await post('/v2/payment-links', e.value);
  });

  it('describes every webhook event with its payload', () => {
    assert.ok(doc.webhooks['payment.captured'].post.requestBody.content['application/json'].schema);
    assert.ok(doc.webhooks['payment_link.paid']);
    assert.deepEqual(doc.components.schemas.Event.required, ['id', 'type', 'created_at', 'entity_id', 'data']);
  });

  it('passes redocly lint with the recommended rules', async () => {
    const bin = `${root}node_modules/.bin/redocly`;
    try {
      await promisify(execFile)(bin, ['lint', committedPath, '--format=stylish'], { env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' } });
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string };
      assert.fail(`redocly lint failed:\n${e.stdout ?? ''}\n${e.stderr ?? ''}`);
    }
  });
});

describe('the SDK types', () => {
  it('are generated from the committed openapi.json (run `npm run sdk:types`)', async () => {
    const out = `${root}node_modules/.cache/payd-sdk-types.d.ts`;
    await promisify(execFile)(`${root}node_modules/.bin/openapi-typescript`, [committedPath, '-o', out]);
    assert.equal(readFileSync(out, 'utf8'), readFileSync(`${root}sdk/src/openapi.d.ts`, 'utf8'), 'sdk/src/openapi.d.ts is stale: npm run sdk:types');
  });
});
