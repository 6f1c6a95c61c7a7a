// Ids at the edge: UUIDs are case-insensitive (RFC 9562), so a client may type
// 7B286DCF-... for 7b286dcf-.... Every field a route's schema declares with format
// "uuid" (path, query and body, nested objects, arrays and $ref'd schemas included) is
// brought to its canonical form once, before validation: lower case, without the
// "urn:uuid:" prefix that the uuid format also accepts. Services then see one spelling
// of each id; and anything bound to an id (associated data of a sealed secret) is bound
// to the stored row's id in any case, never to text a caller typed.
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';

const UUID = /^(?:urn:uuid:)?([0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12})$/i;

/** The canonical spelling of a UUID (lower case, no urn:uuid: prefix), or the text unchanged when it is not one. */
export function canonicalUuid(value: string): string {
  const m = UUID.exec(value);
  return m ? m[1]!.toLowerCase() : value;
}

type Schema = Record<string, unknown>;
const MAX_DEPTH = 12;

/** Does the schema declare a uuid field anywhere? Cached per schema object. */
const hasUuid = new WeakMap<object, boolean>();

function resolve(server: FastifyInstance, schema: unknown): Schema | undefined {
  if (typeof schema !== 'object' || schema === null) return undefined;
  const s = schema as Schema;
  if (typeof s.$ref === 'string') {
    const id = s.$ref.replace(/#$/, '');
    return server.getSchema(id) as Schema | undefined;
  }
  return s;
}

function children(s: Schema): unknown[] {
  const out: unknown[] = [];
  if (s.properties && typeof s.properties === 'object') out.push(...Object.values(s.properties as object));
  if (s.items) out.push(...(Array.isArray(s.items) ? s.items : [s.items]));
  if (s.additionalProperties && typeof s.additionalProperties === 'object') out.push(s.additionalProperties);
  for (const k of ['anyOf', 'oneOf', 'allOf'] as const) if (Array.isArray(s[k])) out.push(...(s[k] as unknown[]));
  return out;
}

function declaresUuid(server: FastifyInstance, schema: unknown, depth = 0): boolean {
  const s = resolve(server, schema);
  if (!s || depth > MAX_DEPTH) return false;
  const known = hasUuid.get(s);
  if (known !== undefined) return known;
  hasUuid.set(s, false); // cycles
  const found = s.format === 'uuid' || children(s).some((c) => declaresUuid(server, c, depth + 1));
  hasUuid.set(s, found);
  return found;
}

/**
 * What `canonicalise` does at one schema, worked out once per schema object: only the
 * properties, items and branches that declare a uuid somewhere (a request's walk visits
 * those alone, not every property of a large body).
 */
interface Plan {
  uuid: boolean; // a string here is a uuid (format uuid, or a branch that is one)
  props: Array<[string, unknown]>;
  item: unknown;
  branches: unknown[];
}
const plans = new WeakMap<object, Plan>();

function planOf(server: FastifyInstance, s: Schema): Plan {
  let plan = plans.get(s);
  if (plan) return plan;
  const branches: unknown[] = [];
  let branchUuid = false;
  for (const k of ['anyOf', 'oneOf', 'allOf'] as const) {
    if (!Array.isArray(s[k])) continue;
    for (const b of s[k] as unknown[]) {
      if (resolve(server, b)?.format === 'uuid') branchUuid = true;
      if (declaresUuid(server, b)) branches.push(b);
    }
  }
  const props = Object.entries((s.properties ?? {}) as Record<string, unknown>).filter(([, sub]) => declaresUuid(server, sub));
  const item = Array.isArray(s.items) || !s.items || !declaresUuid(server, s.items) ? undefined : s.items;
  plan = { uuid: s.format === 'uuid' || branchUuid, props, item, branches };
  plans.set(s, plan);
  return plan;
}

/** Canonicalises, in place, the uuid fields of `value` that `schema` declares; returns the (possibly new) value. */
function canonicalise(server: FastifyInstance, schema: unknown, value: unknown, depth = 0): unknown {
  const s = resolve(server, schema);
  if (!s || depth > MAX_DEPTH || !declaresUuid(server, s)) return value;
  const plan = planOf(server, s);
  if (typeof value === 'string') return plan.uuid ? canonicalUuid(value) : value;
  if (Array.isArray(value)) {
    if (plan.item) value.forEach((v, i) => { value[i] = canonicalise(server, plan.item, v, depth + 1); });
    for (const b of plan.branches) canonicalise(server, b, value, depth + 1);
    return value;
  }
  if (typeof value === 'object' && value !== null) {
    const obj = value as Record<string, unknown>;
    for (const [k, sub] of plan.props) {
      if (k in obj) obj[k] = canonicalise(server, sub, obj[k], depth + 1);
    }
    for (const b of plan.branches) canonicalise(server, b, obj, depth + 1);
  }
  return value;
}

/**
 * preValidation hook (registered once for the whole app): the uuid fields of params,
 * querystring and body in canonical form, so validation, services and responses see
 * the stored spelling.
 */
export function canonicaliseUuids(request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction): void {
  const schema = request.routeOptions.schema as Record<string, unknown> | undefined;
  if (!schema) return done();
  const server = request.server;
  if (schema.params && request.params && typeof request.params === 'object') {
    canonicalise(server, schema.params, request.params);
  }
  if (schema.querystring && request.query && typeof request.query === 'object') {
    canonicalise(server, schema.querystring, request.query);
  }
  if (schema.body && request.body !== undefined && request.body !== null) {
    request.body = canonicalise(server, schema.body, request.body);
  }
  done();
}
