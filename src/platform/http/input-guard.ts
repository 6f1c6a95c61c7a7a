// The edge check of every request, before authentication reads a header and before any
// handler or query sees a field: text PostgreSQL cannot store is refused here, once, for
// every route, with a 400 problem naming the field.
//  - NUL (U+0000): PostgreSQL text cannot hold it.
//  - lone surrogates (U+D800 to U+DFFF not in a pair): not Unicode text; drivers would
//    replace them silently (U+FFFD) or the database refuses them.
//  - JSON nested deeper than MAX_DEPTH levels: no payd schema goes beyond ~6, and
//    PostgreSQL's jsonb has its own (stack) limit.
// Keys of objects are text too. Headers are checked at onRequest (the API key, the
// session credential, the idempotency key and the client id inside Basic credentials
// reach queries); body, query string and path parameters at preValidation, after the
// body is parsed (JSON and form-encoded alike).
// docs/decisions.md, "Hostile input".
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { type InvalidParam, type Problem, problems } from './problem.ts';

export const MAX_DEPTH = 32;

// String.prototype.isWellFormed (Node 20; the TypeScript lib here predates it).
const wellFormed = (s: string) => (s as string & { isWellFormed(): boolean }).isWellFormed();

/** Why this text is refused, or undefined when it is fine. */
export function textFault(s: string): string | undefined {
  if (s.includes('\u0000')) return 'must not contain the NUL character (U+0000)';
  if (!wellFormed(s)) return 'must not contain a lone surrogate (U+D800 to U+DFFF outside a pair): send well-formed UTF-8';
  return undefined;
}

/** A key as it can be shown in invalid_params: NUL and lone surrogates written as \uXXXX. */
function printable(key: string): string {
  let out = '';
  for (const c of key) {
    const code = c.charCodeAt(0);
    out += code === 0 || (c.length === 1 && code >= 0xd800 && code <= 0xdfff) ? `\\u${code.toString(16).padStart(4, '0')}` : c;
  }
  return out;
}

function render(path: ReadonlyArray<string | number>): string {
  return path.reduce<string>((acc, p) => (typeof p === 'number' ? `${acc}[${p}]` : acc ? `${acc}.${p}` : p), '');
}

export interface Fault { name: string; reason: string }

type Found = { path: Array<string | number>; reason: string };

// Recursive, but never deeper than MAX_DEPTH + 1 frames (deeper values are refused
// unread), so no body can overflow the stack; the path is built only for a fault.
function walk(value: unknown, depth: number): Found | undefined {
  if (typeof value === 'string') {
    const reason = textFault(value);
    return reason ? { path: [], reason } : undefined;
  }
  if (value === null || typeof value !== 'object') return undefined;
  if (depth >= MAX_DEPTH) return { path: [], reason: `is nested more than ${MAX_DEPTH} levels deep` };
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = walk(value[i], depth + 1);
      if (found) {
        found.path.unshift(i);
        return found;
      }
    }
    return undefined;
  }
  const keys = Object.keys(value);
  for (const key of keys) {
    const reason = textFault(key);
    if (reason) return { path: [printable(key)], reason: `(a field name) ${reason}` };
  }
  for (const key of keys) {
    const found = walk((value as Record<string, unknown>)[key], depth + 1);
    if (found) {
      found.path.unshift(key);
      return found;
    }
  }
  return undefined;
}

/** The first field of a parsed value (document order) that is refused, if any. */
export function findFault(root: unknown): Fault | undefined {
  const found = walk(root, 0);
  return found ? { name: render(found.path), reason: found.reason } : undefined;
}

function refuse(request: FastifyRequest, where: InvalidParam['in'], fault: Fault): Problem {
  const name = fault.name || where;
  const detail = `The request ${where} is invalid: ${name} ${fault.reason}`;
  const problem = problems.invalidRequest(detail, [{ name, in: where, reason: fault.reason }]);
  // The OAuth endpoints also carry RFC 6749's members on every refusal (oauth-errors.ts).
  if (request.routeOptions.url?.startsWith('/oauth/')) {
    problem.extra.error = 'invalid_request';
    problem.extra.error_description = detail;
    problem.headers['cache-control'] = 'no-store';
  }
  return problem;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Basic credentials (RFC 7617) are base64 of UTF-8 text; OAuth clients form-encode the id
 * and secret inside (RFC 6749 2.3.1), so a percent-encoded NUL is a NUL too.
 */
function basicFault(authorization: string): string | undefined {
  const m = /^basic\s+(\S*)\s*$/i.exec(authorization);
  if (!m) return undefined;
  let text: string;
  try {
    text = utf8.decode(Buffer.from(m[1]!, 'base64'));
  } catch {
    return 'Basic credentials must be UTF-8 text';
  }
  if (textFault(text) || /%00/.test(text)) return 'Basic credentials must not contain the NUL character (U+0000)';
  return undefined;
}

export const inputGuardPlugin = fp(async function inputGuard(app: FastifyInstance) {
  // (Callback hooks: nothing here waits, and an async hook costs a promise per request.)
  app.addHook('onRequest', (request, _reply, done) => {
    const headers = request.headers;
    for (const name in headers) {
      const value = headers[name];
      if (value === undefined) continue;
      for (const v of Array.isArray(value) ? value : [value]) {
        const reason = textFault(v) ?? (name === 'authorization' ? basicFault(v) : undefined);
        if (reason) throw refuse(request, 'header', { name, reason });
      }
    }
    done();
  });
  app.addHook('preValidation', (request, _reply, done) => {
    let fault = findFault(request.params);
    if (fault) throw refuse(request, 'path', fault);
    fault = findFault(request.query);
    if (fault) throw refuse(request, 'query', fault);
    fault = findFault(request.body);
    if (fault) throw refuse(request, 'body', fault);
    done();
  });
});
