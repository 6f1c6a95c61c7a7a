// A schema-driven fuzzer of the whole HTTP API. From /openapi.json, a seeded fast-check
// generator builds malformed requests for every operation, sends them in order through
// app.inject with proper credentials (so that they reach validation and the handlers,
// not just the 401), and asserts of every answer:
//   - no status >= 500;
//   - every 4xx is application/problem+json whose status matches (the spec's bodiless
//     404 of payments and client sessions excepted: empty body, no content type; the
//     OAuth endpoints' errors are application/json {error, error_description}, and
//     /oauth/logout, a browser page, refuses with an HTML page);
//   - a refused request (>= 400) changed no row.
// What it sends: bodies generated from the schema with a hostile value in some nodes
// (wrong types, huge/negative/fractional numbers, NUL, lone surrogates and other unicode,
// nulls, extra fields, deep JSON), valid example bodies with one or two mutations, invalid
// JSON, duplicate keys, prototype-poisoning keys, wrong or missing content types, empty
// bodies, bad and foreign path ids, hostile query strings and headers, missing or bad
// credentials now and then.
//
// "No row changed": a test-only row-level trigger on every table of the public schema
// appends the table's name to fuzz_writes on every INSERT, UPDATE and DELETE. The newest
// visible id of that log is read before and after each request: a refused request must
// leave it unchanged. Row-level (not statement-level) so that an UPDATE matching nothing
// does not count; read with MVCC (not a sequence value) so that a transaction rolled back
// does not count either. It is exact per request, costs one tiny query per request, and works the
// same on PGlite and PostgreSQL (the app's background workers are not started by tests).
//
// The requests of a run are split between two test files (openapi-fuzz.test.ts and
// openapi-fuzz-2.test.ts, each its own process and database), so that each stays within
// the runner's 120 s per file on a shared 2-core machine (~90 s each at load average 12;
// at load average 25+ they do not, nor does much else).
// Replay: the failing file prints its command, PAYD_FUZZ_SEED=<seed> PAYD_FUZZ_RUNS=<n>
// npm test -- <file>: the same requests in the same order. PAYD_FUZZ_RUNS is the total of
// both files (default 5,200); PAYD_FUZZ_VERBOSE=1 prints every request and answer.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { createTestApp, type Merchant, type TestApp } from '../helpers/app.ts';

const SEED = process.env.PAYD_FUZZ_SEED ? Number(process.env.PAYD_FUZZ_SEED) : Math.floor(Math.random() * 2 ** 31);
const TOTAL = Number(process.env.PAYD_FUZZ_RUNS ?? 5200);

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Schema = Record<string, unknown> & {
  type?: string | string[]; properties?: Record<string, Schema>; required?: string[]; items?: Schema; anyOf?: Schema[]; oneOf?: Schema[]; allOf?: Schema[];
  enum?: unknown[]; const?: unknown; format?: string; pattern?: string; minLength?: number; maxLength?: number; minimum?: number; maximum?: number;
  minItems?: number; maxItems?: number; $ref?: string;
};
interface Param { name: string; in: 'path' | 'query' | 'header'; required?: boolean; schema: Schema }
interface Operation { method: string; path: string; security: string[]; params: Param[]; bodyType?: string; bodySchema?: Schema }

interface Req {
  method: string;
  url: string;
  headers: Record<string, string>;
  payload?: string;
  /** What was done to it, for the report. */
  kind: string;
}

const FORM = 'application/x-www-form-urlencoded';

// ---------------------------------------------------------------- hostile values
const HOSTILE_STRINGS = [
  '', ' ', '\u0000', 'a\u0000b', '\ud800', 'x\udfffy', '\ud83d', '\u202e\u0645evil', '😀', 'e\u0301', '\ufeff', '\u2028\u2029', '東京',
  '\t\r\n', "'; DROP TABLE payments; --", '%00', '%s%n', '../../etc/passwd', '<script>alert(1)</script>', '${7*7}', '{{7*7}}',
  'null', 'true', '0', '-1', '1e999', 'NaN', 'x'.repeat(1000), 'é'.repeat(5000), '\\u0000', '__proto__', 'constructor',
];
const HOSTILE_NUMBERS = [0, -1, -0, 1.5, -1.5, 0.1, 2 ** 31, -(2 ** 31), 2 ** 53, 2 ** 53 + 2, -(2 ** 53), 1e21, 1e300, -1e300, 99999999999, 100000000000, 5e-324];

const deepJson = fc.integer({ min: 20, max: 200 }).chain((depth) =>
  fc.constantFrom('array', 'object').map((shape) => {
    let v: Json = 1;
    for (let i = 0; i < depth; i++) v = shape === 'array' ? [v] : { a: v };
    return v;
  }));

const hostileString: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...HOSTILE_STRINGS) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: fc.constantFrom('\u0000', '\ud800', '\udc00', 'a', '😀', '\u0085'), maxLength: 12 }) },
);

const chaos: fc.Arbitrary<Json> = fc.oneof(
  { weight: 6, arbitrary: hostileString },
  { weight: 3, arbitrary: fc.constantFrom<Json>(...HOSTILE_NUMBERS) },
  { weight: 2, arbitrary: fc.constantFrom<Json>(null, true, false, [], {}, [null], { '': '' }, ['a', 1]) },
  { weight: 1, arbitrary: deepJson },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<Json> },
);

// ---------------------------------------------------------------- schema -> values
function makeGen(doc: { components: { schemas: Record<string, Schema> } }, ids: () => string[]) {
  const resolve = (s: Schema): Schema => {
    let out = s;
    for (let i = 0; out.$ref && i < 10; i++) out = doc.components.schemas[out.$ref.split('/').pop()!] ?? {};
    return out;
  };

  const validString = (s: Schema): fc.Arbitrary<string> => {
    const max = s.maxLength ?? 40;
    const min = s.minLength ?? 0;
    switch (s.format) {
      case 'uuid': return fc.oneof(fc.constantFrom(...ids()), fc.uuid());
      case 'date-time': return fc.oneof(
        { weight: 4, arbitrary: fc.date({ min: new Date('2000-01-01'), max: new Date('2040-01-01'), noInvalidDate: true }).map((d) => d.toISOString()) },
        // RFC 3339's edges that JavaScript or PostgreSQL refuse (issue 45, item 3): a leap
        // second, offsets beyond ±14:00, year 0000, 30 February, 24:00, the far years.
        { weight: 1, arbitrary: fc.constantFrom('2026-06-30T23:59:60Z', '2016-12-31T23:59:60+00:00', '2026-06-30T12:00:00+23:59', '2026-06-30T12:00:00-16:00',
          '0000-01-01T00:00:00Z', '2026-02-30T00:00:00Z', '2026-06-30T24:00:00Z', '9999-12-31T23:59:59-14:00', '0001-01-01T00:00:00+14:00') },
      );
      case 'date': return fc.date({ min: new Date('1950-01-01'), max: new Date('2040-01-01'), noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10));
      case 'email': return fc.emailAddress();
      case 'uri': return fc.webUrl({ validSchemes: ['https'] });
      case 'ipv4': return fc.ipV4();
      case 'ipv6': return fc.ipV6();
    }
    if (s.pattern) {
      try {
        return fc.stringMatching(new RegExp(s.pattern)).map((x) => x.slice(0, max));
      } catch { /* fall through */ }
    }
    return fc.string({ minLength: min, maxLength: Math.min(max, Math.max(min, 40)) });
  };

  const cache = new Map<Schema, fc.Arbitrary<Json>>();
  /** Values of the schema, with a hostile value instead in about one node of `rate`. */
  const arb = (raw: Schema, depth = 0): fc.Arbitrary<Json> => {
    const s = resolve(raw);
    const hit = cache.get(s);
    if (hit) return hit;
    let valid: fc.Arbitrary<Json>;
    const type = Array.isArray(s.type) ? s.type.find((x) => x !== 'null') : s.type;
    if (s.const !== undefined) valid = fc.constant(s.const as Json);
    else if (s.enum) valid = fc.constantFrom(...(s.enum as Json[]));
    else if (s.anyOf || s.oneOf) valid = fc.oneof(...(s.anyOf ?? s.oneOf)!.map((x) => arb(x, depth + 1)));
    else if (s.allOf) valid = arb(s.allOf[0]!, depth + 1);
    else if (type === 'object' || s.properties) {
      const props = s.properties ?? {};
      const model: Record<string, fc.Arbitrary<Json>> = {};
      for (const [k, v] of Object.entries(props)) model[k] = depth > 6 ? fc.constant(null) : arb(v, depth + 1);
      valid = fc.record(model, { requiredKeys: (s.required ?? []).filter((k) => k in props) }) as fc.Arbitrary<Json>;
    } else if (type === 'array') {
      valid = fc.array(s.items && depth <= 6 ? arb(s.items, depth + 1) : fc.constant(null), { minLength: s.minItems ?? 0, maxLength: Math.min(s.maxItems ?? 3, 3) });
    } else if (type === 'integer') {
      const lo = s.minimum ?? -1000;
      const hi = s.maximum ?? 100000;
      valid = fc.oneof(fc.constantFrom(lo, hi), fc.bigInt({ min: BigInt(Math.ceil(lo)), max: BigInt(Math.floor(hi)) }).map(Number), fc.integer({ min: Math.max(lo, 1), max: Math.max(Math.min(hi, 5000), Math.max(lo, 1)) }));
    } else if (type === 'number') {
      valid = fc.double({ min: s.minimum ?? -1e6, max: s.maximum ?? 1e6, noNaN: true, noDefaultInfinity: true });
    } else if (type === 'boolean') valid = fc.boolean();
    else if (type === 'null') valid = fc.constant(null);
    else valid = validString(s);
    // Strings also come as a valid-looking text with NUL or a lone surrogate inside.
    const tainted = typeof valid === 'undefined' || !(type === 'string' || (!type && !s.enum && !s.const && !s.anyOf && !s.oneOf && !s.allOf)) ? undefined
      : fc.tuple(validString(s), fc.constantFrom('\u0000', '\ud800', '\udfff', '\udbff\u0000'), fc.nat()).map(([v, bad, at]) => {
        const i = v.length ? at % (v.length + 1) : 0;
        return v.slice(0, i) + bad + v.slice(i);
      });
    const out = fc.oneof({ weight: 14, arbitrary: valid }, { weight: 1, arbitrary: chaos }, ...(tainted ? [{ weight: 1, arbitrary: tainted as fc.Arbitrary<Json> }] : []));
    cache.set(s, out);
    return out;
  };
  return { arb, resolve };
}

// ---------------------------------------------------------------- mutations of a valid example
type Path = Array<string | number>;
function pathsOf(v: Json, at: Path = [], out: Path[] = []): Path[] {
  out.push(at);
  if (Array.isArray(v)) v.forEach((x, i) => pathsOf(x, [...at, i], out));
  else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) pathsOf(x, [...at, k], out);
  return out;
}
function setAt(root: Json, path: Path, op: 'replace' | 'delete' | 'extra' | 'wrap', value: Json): Json {
  const copy = structuredClone(root);
  if (path.length === 0) return op === 'wrap' ? [copy] : op === 'extra' && copy && typeof copy === 'object' && !Array.isArray(copy) ? { ...copy, unexpected_field: value } : value;
  let parent = copy as Record<string | number, Json>;
  for (const p of path.slice(0, -1)) parent = parent[p] as Record<string | number, Json>;
  const last = path[path.length - 1]!;
  if (op === 'delete') {
    if (Array.isArray(parent)) parent.splice(last as number, 1);
    else delete parent[last];
  } else if (op === 'wrap') parent[last] = [parent[last]!];
  else if (op === 'extra') {
    const target = parent[last];
    if (target && typeof target === 'object' && !Array.isArray(target)) (target as Record<string, Json>).unexpected_field = value;
    else parent[last] = value;
  } else parent[last] = value;
  return copy;
}
const mutation = (example: Json): fc.Arbitrary<{ body: Json; what: string }> => {
  const paths = pathsOf(example);
  const one = fc.tuple(fc.nat({ max: paths.length - 1 }), fc.constantFrom('replace', 'replace', 'replace', 'delete', 'extra', 'wrap') as fc.Arbitrary<'replace' | 'delete' | 'extra' | 'wrap'>, chaos);
  const count = fc.oneof({ weight: 4, arbitrary: fc.constant(0) }, { weight: 5, arbitrary: fc.constant(1) }, { weight: 2, arbitrary: fc.constant(2) });
  return count.chain((k) => fc.array(one, { minLength: k, maxLength: k })).map((ms) => {
    let body = example;
    const what: string[] = [];
    for (const [i, op, value] of ms) {
      const p = paths[i]!;
      try {
        body = setAt(body, p, op, value);
        what.push(`${op} ${p.join('.') || '(root)'}`);
      } catch { /* the path went away with an earlier mutation */ }
    }
    return { body, what: what.length ? what.join(', ') : 'valid example' };
  });
};

// ---------------------------------------------------------------- serialization of a body
const BAD_JSON = [
  '{', '{"a":', '{"a":1,}', "{'a':1}", '{"a":NaN}', '{"a":1}{"b":2}', '[', 'nul', 'tru', '\u0000', '{"a":"\u0000"}', '\ufeff{}',
  '{"a":1e999}', '{"__proto__":{"polluted":1}}', '{"constructor":{"prototype":{"polluted":1}}}', '{"a":"\\ud800"}', '{"a":"\\u0000"}',
  '"just a string"', '123', 'null', '[]', '['.repeat(20000) + ']'.repeat(20000), '{"a":'.repeat(5000) + '1' + '}'.repeat(5000), '{"a":/* comment */1}', '{"a":01}', '{"a":"\\x41"}', '{"a":"tab\there"}',
];
const CONTENT_TYPES = [
  'text/plain', 'application/xml', 'multipart/form-data; boundary=x', 'application/json; charset=latin1', 'application/JSON',
  'application/vnd.api+json', 'application/json;;;', '', 'image/png', FORM, 'application/json', 'application/x-www-form-urlencoded; charset=utf-16',
];

function formOf(v: Json): string {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return typeof v === 'string' ? v : JSON.stringify(v);
  const parts: string[] = [];
  const enc = (x: string) => { try { return encodeURIComponent(x); } catch { return '%ED%A0%80'; } };
  for (const [k, x] of Object.entries(v)) {
    for (const item of Array.isArray(x) ? x : [x]) parts.push(`${enc(k)}=${enc(typeof item === 'string' ? item : JSON.stringify(item))}`);
  }
  return parts.join('&');
}

const encodeSegment = (x: string) => { try { return encodeURIComponent(x); } catch { return 'a%ED%A0%80'; } };

// ---------------------------------------------------------------- the test
/** Defines the suite of one part (1-based) of `parts`: TOTAL / parts requests. */
export function defineFuzz(part: number, parts: number, file: string): void {
  const RUNS = Math.ceil(TOTAL / parts);
  const replay = `PAYD_FUZZ_SEED=${SEED} PAYD_FUZZ_RUNS=${TOTAL} npm test -- ${file}`;
  describe(`OpenAPI fuzz, part ${part} of ${parts} (seed ${SEED}, ${RUNS} requests)`, () => {
    let t: TestApp;
    let m: Merchant;
    let other: Merchant;
    const fx: Record<string, string> = {};
    let mgmt: { client_id: string; client_secret: string };
    let mgmtToken: string;

    before(async () => {
      t = await createTestApp();
      m = await t.createMerchant('fuzz');
      other = await t.createMerchant('fuzz-other');
      const inject = async (method: string, url: string, headers: Record<string, string>, payload?: object) => {
        const res = await t.app.inject({ method: method as 'POST', url, headers, ...(payload ? { payload } : {}) });
        assert.ok(res.statusCode < 300, `${method} ${url}: ${res.body}`);
        return res.json();
      };
      const card = { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2031', cvv: '123' };
      fx.payment = (await inject('POST', '/v2/payments', m.auth, { amount: 1000, currency: 'EUR', capture_mode: 'MANUAL', split: [{ partner: 'card-sim', method: 'CARD', amount: 1000, instrument: card }] })).id;
      // More payments to act on: authorized (captures, voids) and captured (refunds).
      for (const [i, mode] of (['MANUAL', 'MANUAL', 'AUTOMATIC', 'AUTOMATIC'] as const).entries()) {
        fx[`payment${i}`] = (await inject('POST', '/v2/payments', m.auth, { amount: 5000, currency: 'EUR', capture_mode: mode, split: [{ partner: 'card-sim', method: 'CARD', amount: 5000, instrument: card }] })).id;
      }
      fx.otherPayment = (await inject('POST', '/v2/payments', other.auth, { amount: 500, currency: 'EUR', split: [{ partner: 'card-sim', method: 'CARD', amount: 500, instrument: card }] })).id;
      const session = await inject('POST', '/v2/client-sessions', m.auth, { amount: 2500, currency: 'EUR' });
      fx.session = session.id;
      fx.widget = session.widget.data;
      fx.link = (await inject('POST', '/v2/payment-links', m.auth, { amount: 1500, currency: 'EUR', order: { reference: 'fuzz-1' } }).catch(() => ({ id: fx.session }))).id;
      mgmt = await inject('POST', '/admin/v1/identity/applications', t.adminHeaders, {
        name: 'Fuzz back office', callback_urls: ['https://bo.example/cb'], token_endpoint_auth_method: 'client_secret_post',
        management_scopes: ['read:users', 'create:users', 'update:users', 'read:user_events', 'login_as:users', 'create:clients', 'read:clients', 'update:clients'],
      });
      // Path ids name other objects than the credentials of the run: revoking or rotating
      // them must not turn the rest of the run into 401s.
      fx.client = (await inject('POST', '/admin/v1/identity/applications', t.adminHeaders, { name: 'Fuzz target', callback_urls: ['https://t.example/cb'] })).client_id;
      const tok = await t.app.inject({ method: 'POST', url: '/oauth/token', headers: { 'content-type': FORM }, payload: new URLSearchParams({ grant_type: 'client_credentials', ...mgmt }).toString() });
      mgmtToken = tok.json().access_token;
      fx.user = (await inject('POST', '/admin/v1/identity/users', t.adminHeaders, { email: 'fuzz@example.com', password: 'a long enough password', given_name: 'Fuzz' })).id;
      fx.entity = m.entityId;
      fx.otherEntity = other.entityId;
      fx.apiKey = (await inject('POST', `/admin/v1/entities/${m.entityId}/api-keys`, t.adminHeaders)).id;
      const ev = await t.testDb.db.query<{ id: string }>('SELECT id FROM webhook_events LIMIT 1').catch(() => ({ rows: [] as Array<{ id: string }> }));
      if (ev.rows[0]) fx.event = ev.rows[0].id;

      // The write log (see the header); not of the rate-limit counters, which count refused
      // requests too and are written by a timer, nor of idempotency_keys, where a keyed
      // request claims its key before the handler and a refusal gives it back (a row
      // written and deleted: nothing left, which test/payments/idempotency-everywhere.test.ts
      // checks: the same key then works with a corrected body), nor of api_request_log, the
      // request log that records every API call, refused ones too (flushed by a timer).
      await t.testDb.db.query(`CREATE TABLE fuzz_writes (id bigserial PRIMARY KEY, tbl text NOT NULL)`);
      await t.testDb.db.query(`CREATE FUNCTION fuzz_log_write() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN INSERT INTO fuzz_writes (tbl) VALUES (TG_TABLE_NAME); RETURN NULL; END $$`);
      await t.testDb.db.query(`DO $$ DECLARE r record; BEGIN
        FOR r IN SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename NOT IN ('fuzz_writes', 'rate_limit_counters', 'idempotency_keys', 'api_request_log') LOOP
          EXECUTE format('CREATE TRIGGER fuzz_log AFTER INSERT OR UPDATE OR DELETE ON %I FOR EACH ROW EXECUTE FUNCTION fuzz_log_write()', r.tablename);
        END LOOP; END $$`);
    });
    after(() => t.close());

    it('finds no 5xx, only problem+json refusals, and no row changed by a refused request', async () => {
      console.warn(`# payd fuzz: seed ${SEED}, ${RUNS} requests (replay: ${replay})`);
      const doc = (await t.app.inject({ url: '/openapi.json' })).json();
      const ops: Operation[] = [];
      for (const [path, methods] of Object.entries<Record<string, Record<string, unknown>>>(doc.paths)) {
        for (const [method, op] of Object.entries(methods)) {
          const content = (op.requestBody as { content?: Record<string, { schema: Schema }> } | undefined)?.content ?? {};
          const bodyType = Object.keys(content)[0];
          ops.push({
            method: method.toUpperCase(), path,
            security: ((op.security as Array<Record<string, unknown>> | undefined) ?? []).flatMap((x) => Object.keys(x)),
            params: (op.parameters as Param[] | undefined) ?? [],
            ...(bodyType ? { bodyType, bodySchema: content[bodyType]!.schema } : {}),
          });
        }
      }
      assert.ok(ops.length >= 50, `only ${ops.length} operations in /openapi.json`);
      const allIds = () => Object.values(fx);
      const gen = makeGen(doc, allIds);

      const idFor = (path: string, name: string): string[] => [idOf(path, name)].flat();
      const idOf = (path: string, name: string): string | string[] => {
        if (name === 'key_id') return fx.apiKey!;
        if (name === 'event_id') return fx.event ?? fx.payment!;
        if (path.startsWith('/v2/payments/')) return [0, 1, 2, 3].map((i) => fx[`payment${i}`]!).concat(fx.payment!);
        if (path.startsWith('/v2/client-sessions/')) return fx.session!;
        if (path.startsWith('/v2/payment-links/')) return fx.link!;
        if (path.startsWith('/api/v2/users/') || path.startsWith('/admin/v1/identity/users/')) return fx.user!;
        if (path.startsWith('/api/v2/clients/')) return fx.client!;
        return fx.entity!;
      };
      const BAD_IDS = ['x', '0', '-1', '%00', 'a%00b', '%E0%A4%A', '%ED%A0%80', '%C0%AF', '..%2F..', 'a'.repeat(101), '%20', '%F0%9F%98%80', "'", 'null',
        '00000000-0000-0000-0000-000000000000', '%7Bid%7D', 'ABCDEFAB-1234-4234-8234-1234567890AB', '1e9', '%2e%2e'];
      const pathArb = (op: Operation): fc.Arbitrary<{ url: string; what: string }> => {
        const names = [...op.path.matchAll(/\{(\w+)\}/g)].map((x) => x[1]!);
        if (names.length === 0) return fc.constant({ url: op.path, what: '' });
        const one = (name: string) => fc.oneof(
          { weight: 6, arbitrary: fc.constantFrom(...idFor(op.path, name)).map((v) => ({ v, what: '' })) },
          { weight: 1, arbitrary: fc.constantFrom(...allIds()).map((v) => ({ v, what: `foreign ${name}` })) },
          { weight: 1, arbitrary: fc.uuid().map((v) => ({ v, what: `unknown ${name}` })) },
          { weight: 2, arbitrary: fc.constantFrom(...BAD_IDS).map((v) => ({ v, what: `bad ${name}` })) },
          { weight: 1, arbitrary: hostileString.map((v) => ({ v: encodeSegment(v), what: `hostile ${name}` })) },
        );
        return fc.tuple(...names.map(one)).map((vals) => {
          let url = op.path;
          names.forEach((n, i) => { url = url.replace(`{${n}}`, vals[i]!.v || 'x'); });
          return { url, what: vals.map((x) => x.what).filter(Boolean).join(', ') };
        });
      };
      const queryArb = (op: Operation): fc.Arbitrary<string> => {
        const qs = op.params.filter((p) => p.in === 'query');
        const parts = qs.map((p) => fc.oneof(
          { weight: 2, arbitrary: fc.constant(undefined) },
          { weight: 3, arbitrary: gen.arb(p.schema).map((v) => [p.name, typeof v === 'string' ? v : JSON.stringify(v)] as [string, string]) },
          { weight: 1, arbitrary: fc.array(hostileString, { minLength: 2, maxLength: 3 }).map((vs) => vs.map((v) => [p.name, v] as [string, string])) },
        ));
        const extra = fc.option(fc.tuple(fc.constantFrom('unknown', 'limit', '__proto__', 'a[b]', 'a%00'), hostileString), { freq: 8 });
        return fc.tuple(fc.tuple(...parts), extra).map(([vals, ex]) => {
          const pairs: Array<[string, string]> = [];
          for (const v of vals) if (v) pairs.push(...(Array.isArray(v[0]) ? (v as unknown as Array<[string, string]>) : [v as [string, string]]));
          if (ex) pairs.push(ex);
          const enc = (x: string) => (x === 'a%00' ? x : encodeSegment(x));
          return pairs.length ? `?${pairs.map(([k, v]) => `${enc(k)}=${enc(v)}`).join('&')}` : '';
        });
      };
      const headerValue = fc.oneof(
        fc.stringMatching(/^[\x21-\x7e]{1,40}$/),
        fc.constantFrom('', ' ', 'a\u0000b', 'x'.repeat(300), 'max-age=-1', 'max-age=99999999999999999999', 'max-age=abc', 'no-cache', 'max-age=0, max-age=5', 'é'),
      );
      const headersArb = (op: Operation): fc.Arbitrary<{ h: Record<string, string>; what: string }> => {
        const hs = op.params.filter((p) => p.in === 'header');
        const auth = (scheme: string | undefined): Record<string, string> => {
          switch (scheme) {
            case 'bearerAuth': return m.auth;
            case 'apiKey': return { 'x-api-key': m.apiKey };
            case 'operatorToken': return t.adminHeaders;
            case 'managementToken': return { authorization: `Bearer ${mgmtToken}` };
            case 'sessionCredential': return { 'x-payd-session': fx.widget! };
            default: return {};
          }
        };
        const badAuth = fc.constantFrom<[Record<string, string>, string]>(
          [{}, 'no credentials'], [{ authorization: 'Bearer a.b.c' }, 'bad token'], [{ authorization: 'Basic %%%' }, 'bad basic'],
          [{ authorization: `Bearer ${mgmtToken}` }, 'management token'], [{ authorization: `Bearer ${other.token}` }, 'other merchant'],
          [{ 'x-api-key': 'k\u0000' }, 'NUL api key'], [{ 'x-payd-session': 'garbage' }, 'bad session'], [{ authorization: 'Basic ' + Buffer.from('a\u0000:\u00ff').toString('base64') }, 'hostile basic'],
          [{ authorization: 'Basic ' + Buffer.from([0xed, 0xa0, 0x80, 0x3a, 0x78]).toString('base64') }, 'invalid UTF-8 basic'],
        );
        return fc.tuple(
          fc.oneof({ weight: 10, arbitrary: fc.constant<[Record<string, string>, string] | undefined>(undefined) }, { weight: 1, arbitrary: badAuth }),
          fc.tuple(...hs.map((p) => fc.option(headerValue.map((v) => [p.name, v] as [string, string]), { freq: 2 }))),
          fc.boolean(),
          fc.option(fc.tuple(fc.constantFrom('x-request-id', 'cookie', 'accept', 'content-encoding', 'accept-encoding', 'x-forwarded-for', 'origin'), headerValue), { freq: 6 }),
        ).map(([bad, vals, basic, odd]) => {
          let h: Record<string, string> = bad ? bad[0] : auth(op.security[0]);
          // The OAuth endpoints: client credentials of the management application, as Basic or in the form.
          if (!bad && op.path.startsWith('/oauth/') && op.security.length === 0 && basic) {
            h = { authorization: `Basic ${Buffer.from(`${mgmt.client_id}:${mgmt.client_secret}`).toString('base64')}` };
          }
          h = { ...h };
          for (const v of vals) if (v) h[v[0]] = v[1];
          if (odd) h[odd[0]] = odd[1];
          return { h, what: [bad ? bad[1] : '', odd ? `header ${odd[0]}` : ''].filter(Boolean).join(', ') };
        });
      };

      const EXAMPLES: Record<string, Json> = {
        'POST /v2/payments': { amount: 1000, currency: 'EUR', order: { reference: 'r-1' }, split: [{ partner: 'card-sim', method: 'CARD', amount: 1000, instrument: { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2031', cvv: '123' } }] },
        'POST /v2/client-sessions': { amount: 2500, currency: 'EUR', order: { reference: 'cs-1' }, customer: { email: 'a@example.com' } },
        'POST /v2/client-sessions/{id}/abort': { status: 'ABORTED_BY_MERCHANT' },
        'POST /v2/eligible-solutions': { amount: 2500, currency: 'EUR' },
        'POST /v2/payments/{id}/captures': { amount: 100 },
        'POST /v2/payments/{id}/refunds': { amount: 100, reason: 'fuzz' },
        'POST /v2/payments/{id}/voids': { reason: 'fuzz' },
        'POST /v2/payment-links': { amount: 1500, currency: 'EUR', order: { reference: 'pl-1' } },
        'POST /checkout/v1/session/payments': { split: [{ partner: 'card-sim', method: 'CARD', amount: 2500, instrument: { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2031', cvv: '123' } }] },
        'POST /admin/v1/entities': { name: 'Fuzz entity' },
        'PUT /admin/v1/entities/{id}/webhook-endpoint': { url: 'https://hooks.example/payd' },
        'POST /admin/v1/identity/users': { email: 'new@example.com', password: 'a long enough password', given_name: 'N' },
        'POST /admin/v1/identity/applications': { name: 'App', callback_urls: ['https://app.example/cb'] },
        'POST /api/v2/users': { email: 'mgmt@example.com', password: 'a long enough password' },
        'PATCH /api/v2/users/{id}': { given_name: 'Renamed' },
        'POST /api/v2/clients': { name: 'Client', callback_urls: ['https://c.example/cb'] },
        'PATCH /api/v2/clients/{id}': { name: 'Renamed client' },
        'POST /oauth/token': { grant_type: 'client_credentials' },
        'POST /oauth/introspect': { token: 'abc' },
        'POST /oauth/revoke': { token: 'abc' },
      };

      const bodyArb = (op: Operation): fc.Arbitrary<{ payload?: string; ct?: string; what: string }> => {
        const form = op.bodyType === FORM;
        const ct = op.bodyType ?? 'application/json';
        const serialize = (v: Json) => (form ? formOf(v) : JSON.stringify(v));
        const example = EXAMPLES[`${op.method} ${op.path}`];
        const generated = op.bodySchema ? gen.arb(op.bodySchema).map((body) => ({ body, what: 'generated' })) : fc.constant({ body: {} as Json, what: 'empty object' });
        const values = example !== undefined
          ? fc.oneof({ weight: 3, arbitrary: mutation(example) }, { weight: 2, arbitrary: generated })
          : generated;
        const plain = values.map(({ body, what }) => ({ payload: serialize(body), ct, what }));
        const duplicate = values.chain(({ body }) => fc.tuple(fc.constant(body), chaos)).map(([body, value]) => {
          const text = serialize(body);
          const first = body && typeof body === 'object' && !Array.isArray(body) ? Object.keys(body)[0] : undefined;
          if (!first || !text.startsWith('{')) return { payload: text, ct, what: 'generated' };
          return { payload: `{${JSON.stringify(first)}:${JSON.stringify(value)},${text.slice(1)}`, ct, what: `duplicate key ${first}` };
        });
        const badJson = fc.constantFrom(...BAD_JSON).map((payload) => ({ payload, ct, what: 'invalid JSON' }));
        const badForm = fc.constantFrom('%ZZ', 'a=%00', '=&=&', 'grant_type=%ED%A0%80', 'token=a&token=b', '&&&', `token=${'x'.repeat(5000)}`, 'a[b][c]=1').map((payload) => ({ payload, ct, what: 'odd form' }));
        const wrongType = fc.tuple(values, fc.constantFrom(...CONTENT_TYPES)).map(([{ body }, other]) => ({ payload: other === FORM ? formOf(body) : JSON.stringify(body), ct: other, what: `content-type ${other || '(none)'}` }));
        const huge = fc.constant({ payload: overLimit, ct, what: 'body over the limit' });
        const empty = fc.constantFrom({ payload: '', ct, what: 'empty body' }, { payload: undefined, ct: undefined, what: 'no body' } as { payload?: string; ct?: string; what: string });
        if (!op.bodyType) {
          return fc.oneof(
            { weight: 6, arbitrary: fc.constant({ what: '' }) },
            { weight: 1, arbitrary: badJson },
            { weight: 1, arbitrary: wrongType },
            { weight: 1, arbitrary: plain },
          );
        }
        return fc.oneof(
          { weight: 10, arbitrary: plain },
          { weight: 2, arbitrary: duplicate },
          { weight: 2, arbitrary: form ? badForm : badJson },
          { weight: 2, arbitrary: wrongType },
          { weight: 1, arbitrary: fc.oneof({ weight: 9, arbitrary: empty }, { weight: 1, arbitrary: huge }) },
        );
      };

      const overLimit = JSON.stringify({ a: 'x'.repeat(t.config.bodyLimitBytes) });
      // Now and then another method on the operation's path (what no route serves must be a 404 problem).
      const methodArb = (op: Operation) => fc.oneof({ weight: 40, arbitrary: fc.constant(op.method) }, { weight: 1, arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS') });
      const perOp = ops.map((op) => fc.tuple(fc.constant(op), pathArb(op), queryArb(op), headersArb(op), bodyArb(op), methodArb(op)));
      const requestArb: fc.Arbitrary<Req> = fc.oneof(...perOp).map(([op, p, q, h, b, method]) => {
          const headers = { ...h.h };
          if (b.ct) headers['content-type'] = b.ct;
          return {
            method, url: p.url + q, headers,
            ...(b.payload !== undefined ? { payload: b.payload } : {}),
            kind: [`${op.method} ${op.path}`, method === op.method ? '' : `method ${method}`, p.what, h.what, b.what].filter(Boolean).join(' | '),
          };
        });

      const requests = fc.sample(requestArb, { seed: SEED + part, numRuns: RUNS });
      const lastWrite = async () => Number((await t.testDb.db.query<{ id: string | null }>('SELECT max(id) AS id FROM fuzz_writes')).rows[0]!.id ?? 0);
      const failures: string[] = [];
      const seen = new Set<string>();
      const byStatus = new Map<number, number>();
      const opsReached = new Map<string, Set<number>>();
      let n = 0;
      let before = await lastWrite();
      for (const req of requests) {
        n++;
        let res: LightMyRequestResponse;
        try {
          res = await t.app.inject({ method: req.method as 'GET', url: req.url, headers: req.headers, ...(req.payload !== undefined ? { payload: req.payload } : {}) });
        } catch (err) {
          failures.push(`#${n} inject threw ${(err as Error).message} | ${req.kind}`);
          continue;
        }
        const after = await lastWrite();
        const status = res.statusCode;
        byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
        const op = req.kind.split(' | ')[0]!;
        if (!opsReached.has(op)) opsReached.set(op, new Set());
        opsReached.get(op)!.add(status);
        if (process.env.PAYD_FUZZ_VERBOSE) console.warn(`#${n} ${status} ${req.kind} ${req.method} ${req.url.slice(0, 120)} ${JSON.stringify(req.headers).slice(0, 200)} ${String(req.payload).slice(0, 200)} -> ${res.body.slice(0, 200)}`);
        const fail = (what: string) => {
          const key = `${op} ${status} ${what.slice(0, 60)}`;
          if (seen.has(key)) return;
          seen.add(key);
          failures.push(`#${n} ${what}\n    ${req.kind}\n    ${req.method} ${req.url.slice(0, 300)}\n    headers ${JSON.stringify(req.headers).slice(0, 300)}\n    body ${JSON.stringify(req.payload ?? null).slice(0, 400)}\n    -> ${status} ${res.headers['content-type'] ?? ''} ${res.body.slice(0, 300)}`);
        };
        if (status >= 500) fail(`answered ${status}`);
        else if (status >= 400) {
          const bodiless404 = status === 404 && res.body === '' && res.headers['content-type'] === undefined;
          if (!bodiless404) {
            const oauthJson = /^\/(oauth\/(token|introspect|revoke)|userinfo)(\?|$)/.test(req.url) && /^application\/json/.test(String(res.headers['content-type']));
            // The browser endpoint among the documented ones answers its refusals as a page (decisions.md, Errors).
            const browserPage = /^\/oauth\/logout(\?|$)/.test(req.url) && /^text\/html/.test(String(res.headers['content-type']));
            if (browserPage) {
              if (!/<p role="alert">/.test(res.body)) fail('a refusal page without its message');
            } else if (oauthJson) {
              // The OAuth endpoints answer RFC 6749 / 6750 errors: {error, error_description}.
              let body: { error?: unknown; error_description?: unknown } = {};
              try { body = JSON.parse(res.body); } catch { fail('an OAuth error body that is not JSON'); }
              if (typeof body.error !== 'string' || typeof body.error_description !== 'string') fail('an OAuth error without error or error_description');
              if (status === 401 && !res.headers['www-authenticate']) fail('a 401 without WWW-Authenticate');
            } else if (!/^application\/problem\+json/.test(String(res.headers['content-type']))) fail('a refusal that is not problem+json');
            else {
              let body: { status?: unknown; type?: unknown } = {};
              try { body = JSON.parse(res.body); } catch { fail('a problem+json body that is not JSON'); }
              if (body.status !== status || typeof body.type !== 'string') fail('a problem whose status or type is wrong');
            }
          }
          if (after !== before) {
            const tables = (await t.testDb.db.query<{ tbl: string }>('SELECT DISTINCT tbl FROM fuzz_writes WHERE id > $1', [before])).rows.map((r) => r.tbl);
            fail(`a refused request changed rows of ${tables.join(', ')}`);
          }
        }
        before = after;
      }
      const statuses = [...byStatus].sort((a, b) => a[0] - b[0]).map(([s, c]) => `${s}:${c}`).join(' ');
      console.warn(`# payd fuzz: ${n} requests over ${opsReached.size}/${ops.length} operations; statuses ${statuses}`);
      const never2xx = [...opsReached].filter(([, s]) => ![...s].some((x) => x < 300)).map(([o]) => o);
      if (never2xx.length) console.warn(`# payd fuzz: operations never accepted in this run: ${never2xx.join('; ')}`);
      assert.equal(n, RUNS);
      assert.equal(opsReached.size, ops.length, `operations never exercised: ${ops.map((o) => `${o.method} ${o.path}`).filter((o) => !opsReached.has(o)).join(', ')}`);
      assert.deepEqual(failures, [], `seed ${SEED}: ${failures.length} distinct failures (replay: ${replay}):\n${failures.slice(0, 40).join('\n')}`);
    });
  });
}
