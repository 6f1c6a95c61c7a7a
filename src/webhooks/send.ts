// One HTTP attempt of a webhook: POST the signed JSON body, never follow redirects, stop
// at the timeout, keep the start of the response body for the delivery log. Unless
// private targets are allowed, the connection goes only to addresses the SSRF guard
// checked (the guard is the connection's own DNS lookup).
import { lookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import type { LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { addressProblem, literalHost, toHeaderPairs, type WebhookHeader } from './target.ts';

export const USER_AGENT = 'payd-webhooks/1';
/** Characters of the response body kept in the delivery log. */
export const RESPONSE_BODY_LIMIT = 2048;

export interface Outgoing {
  url: string;
  /** The target's extra headers (the link's or the endpoint's). */
  extraHeaders: WebhookHeader[];
  /** payd's own headers: signature, event id and type. */
  paydHeaders: Record<string, string>;
  body: string;
  timeoutMs: number;
  allowPrivateTargets: boolean;
  /** Aborted when the worker stops. */
  stop: AbortSignal;
  /** How host names resolve (default: the system resolver); tests pass their own. */
  resolve?: Resolver;
}

export interface AttemptOutcome {
  statusCode: number | null;
  error: string | null;
  responseBody: string | null;
  durationMs: number;
  /** The worker stopped during the call: the outcome is unknown. */
  interrupted: boolean;
}

/** Refusal of the SSRF guard (its message goes to the delivery log as it is). */
class TargetRefused extends Error {}

/** Resolves a host name to every address (the DNS by default; tests pass their own). */
export type Resolver = (host: string) => Promise<Array<{ address: string; family: number }>>;

const systemResolver: Resolver = async (host) => lookup(host, { all: true, verbatim: true });

/**
 * The lookup of the connection itself: the addresses it connects to are the ones
 * checked here, in the same resolution, so a name cannot pass the check with a public
 * address and then connect to a private one (DNS rebinding).
 */
function guardedLookup(resolve: Resolver, allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname).then((addresses) => {
      const family = typeof options === 'object' && options.family ? options.family : 0;
      const usable = addresses.filter((a) => family === 0 || a.family === family);
      if (usable.length === 0) throw new TargetRefused(`refused: ${hostname} resolves to no address`);
      if (!allowPrivate) {
        for (const a of usable) {
          const why = addressProblem(a.address);
          if (why) throw new TargetRefused(`refused: ${hostname} resolves to the non-public address ${a.address}, ${why} (PAYD_WEBHOOK_ALLOW_PRIVATE_TARGETS is off)`);
        }
      }
      if (typeof options === 'object' && options.all) (callback as (e: null, a: LookupAddress[]) => void)(null, usable);
      else callback(null, usable[0]!.address, usable[0]!.family);
    }).catch((err: Error) => callback(err as NodeJS.ErrnoException, '', 0));
  };
}

interface RawResponse {
  status: number;
  location: string | undefined;
  body: string | null;
}

/** One POST, without following redirects; the start of the body is kept. */
function post(o: Outgoing, headers: Record<string, string | string[]>, signal: AbortSignal): Promise<RawResponse> {
  const url = new URL(o.url);
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = client.request(url, {
      method: 'POST',
      headers: { ...headers, 'content-length': String(Buffer.byteLength(o.body)) },
      signal,
      agent: false,
      lookup: guardedLookup(o.resolve ?? systemResolver, o.allowPrivateTargets),
    }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      let settled = false;
      const done = (body: string | null) => {
        if (settled) return;
        settled = true;
        const loc = res.headers.location;
        resolve({ status: res.statusCode ?? 0, location: Array.isArray(loc) ? loc[0] : loc, body });
        res.destroy();
      };
      const text = () => {
        const t = Buffer.concat(chunks).toString('utf8');
        return t.length > RESPONSE_BODY_LIMIT ? `${t.slice(0, RESPONSE_BODY_LIMIT)}…` : t;
      };
      res.on('data', (c: Buffer) => {
        chunks.push(c);
        size += c.byteLength;
        if (size >= RESPONSE_BODY_LIMIT * 4) done(text());
      });
      res.on('end', () => done(text()));
      // The status is known; a body cut short (timeout, reset) does not change the outcome.
      res.on('error', () => done(chunks.length ? text() : null));
      res.on('aborted', () => done(chunks.length ? text() : null));
    });
    req.on('error', reject);
    req.end(o.body);
  });
}

function describe(err: unknown): string {
  if (err instanceof TargetRefused) return err.message;
  const e = err as { message?: string; code?: string; cause?: { code?: string; message?: string } };
  const cause = e.cause?.code ?? e.cause?.message ?? (e.code && !(e.message ?? '').includes(e.code) ? e.code : undefined);
  return (cause ? `${e.message ?? 'request failed'}: ${cause}` : (e.message ?? String(err))).slice(0, 500);
}

/**
 * Target headers as request headers: one header line per value, as the merchant listed
 * them (node:http writes an array as repeated lines), so a value holding a comma arrives
 * as it was given. Names are grouped case-insensitively under their first spelling.
 */
function headerObject(o: Outgoing): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  const names = new Map<string, string>();
  for (const [name, value] of toHeaderPairs(o.extraHeaders)) {
    const key = name.toLowerCase();
    const first = names.get(key);
    if (first === undefined) {
      names.set(key, name);
      out[name] = [value];
    } else {
      (out[first] as string[]).push(value);
    }
  }
  for (const [k, v] of Object.entries(o.paydHeaders)) out[k] = v;
  out['content-type'] = 'application/json';
  out['user-agent'] = USER_AGENT;
  return out;
}

export async function sendWebhook(o: Outgoing): Promise<AttemptOutcome> {
  const started = performance.now();
  const timeout = AbortSignal.timeout(o.timeoutMs);
  const signal = AbortSignal.any([timeout, o.stop]);
  const outcome = (partial: Partial<AttemptOutcome>): AttemptOutcome => ({
    statusCode: null, error: null, responseBody: null, interrupted: false,
    durationMs: Math.round(performance.now() - started), ...partial,
  });
  try {
    if (!o.allowPrivateTargets) {
      // An IP literal is never resolved: checked here (names are checked as they resolve).
      const host = literalHost(o.url);
      const why = host === undefined ? undefined : addressProblem(host);
      if (why) return outcome({ error: `refused: ${host} is the non-public address ${host}, ${why} (PAYD_WEBHOOK_ALLOW_PRIVATE_TARGETS is off)` });
    }
    const res = await post(o, headerObject(o), signal);
    const ok = res.status >= 200 && res.status < 300;
    const error = ok ? null : res.status >= 300 && res.status < 400
      ? `redirect ${res.status} not followed (location: ${res.location ?? 'none'})`
      : `HTTP ${res.status}`;
    return outcome({ statusCode: res.status, error, responseBody: res.body });
  } catch (err) {
    if (o.stop.aborted) return outcome({ error: 'interrupted: the worker stopped during the call', interrupted: true });
    if (timeout.aborted) return outcome({ error: `timeout after ${o.timeoutMs} ms` });
    return outcome({ error: describe(err) });
  }
}
