// Where a webhook goes: a URL and extra headers in the spec's shape
// ([{ name, values: [...] }]). Validation shared by the operator API, enqueueEvent and
// (through validateWebhookTarget) the payment-link module; the SSRF guard used at
// delivery time.
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import type { InvalidParam } from '../platform/http/problem.ts';

export interface WebhookHeader {
  name: string;
  values: string[];
}

export interface WebhookTarget {
  url: string;
  headers?: WebhookHeader[];
}

export const MAX_URL_LENGTH = 2048;
export const MAX_HEADERS = 20;
export const MAX_HEADER_VALUES = 10;
export const MAX_HEADER_VALUE_LENGTH = 1000;
/** RFC 9110 token characters. */
export const HEADER_NAME_PATTERN = "^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$";
/** Printable ASCII and tab: no CR, LF or NUL (header injection). */
export const HEADER_VALUE_PATTERN = '^[\\t\\x20-\\x7e]*$';

/** Headers payd sets itself or that would break the HTTP exchange. */
const RESERVED = new Set([
  'host', 'content-type', 'content-length', 'content-encoding', 'transfer-encoding', 'connection', 'keep-alive',
  'upgrade', 'te', 'trailer', 'expect', 'user-agent', 'cookie',
]);

export function isReservedHeader(name: string): boolean {
  const n = name.toLowerCase();
  return RESERVED.has(n) || n.startsWith('payd-') || n.startsWith('proxy-');
}

/** Ports fetch refuses to call (the Fetch standard's "bad ports"). */
const BAD_PORTS = new Set([
  1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104, 109, 110, 111,
  113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515, 526, 530, 531, 532, 540, 548,
  554, 556, 563, 587, 601, 636, 989, 990, 993, 995, 1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061, 6000, 6566,
  6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080,
]);

/** Why a URL cannot be a webhook target, or undefined when it can. */
export function urlProblem(raw: string): string | undefined {
  if (raw.length > MAX_URL_LENGTH) return `must be at most ${MAX_URL_LENGTH} characters`;
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return 'must be an absolute http or https URL';
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return 'must be an http or https URL';
  if (u.username || u.password) return 'must not carry credentials (send them in headers)';
  if (u.port && BAD_PORTS.has(Number(u.port))) return `must not use port ${u.port} (HTTP clients refuse it)`;
  return undefined;
}

/** Every problem of a target, each named with `prefix` (e.g. "webhook." or ""). */
export function validateWebhookTarget(target: unknown, prefix = ''): InvalidParam[] {
  const out: InvalidParam[] = [];
  const bad = (name: string, reason: string) => out.push({ name: `${prefix}${name}`, in: 'body', reason });
  if (typeof target !== 'object' || target === null) {
    bad(prefix ? prefix.replace(/\.$/, '') : 'body', 'must be an object with url and headers');
    return out;
  }
  const { url, headers } = target as Record<string, unknown>;
  if (typeof url !== 'string') bad('url', 'must be a string');
  else {
    const why = urlProblem(url);
    if (why) bad('url', why);
  }
  if (headers === undefined || headers === null) return out;
  if (!Array.isArray(headers)) {
    bad('headers', 'must be an array of {name, values}');
    return out;
  }
  if (headers.length > MAX_HEADERS) bad('headers', `must have at most ${MAX_HEADERS} items`);
  headers.forEach((h: unknown, i) => {
    const at = `headers[${i}]`;
    if (typeof h !== 'object' || h === null) return bad(at, 'must be an object with name and values');
    const { name, values } = h as Record<string, unknown>;
    if (typeof name !== 'string' || !new RegExp(HEADER_NAME_PATTERN).test(name)) {
      bad(`${at}.name`, 'must be an HTTP header name (1 to 100 token characters)');
    } else if (isReservedHeader(name)) {
      bad(`${at}.name`, 'is set by payd and cannot be overridden');
    }
    if (!Array.isArray(values) || values.length === 0 || values.length > MAX_HEADER_VALUES) {
      return bad(`${at}.values`, `must be an array of 1 to ${MAX_HEADER_VALUES} strings`);
    }
    values.forEach((v: unknown, j) => {
      if (typeof v !== 'string' || v.length > MAX_HEADER_VALUE_LENGTH || !new RegExp(HEADER_VALUE_PATTERN).test(v)) {
        bad(`${at}.values[${j}]`, `must be a string of printable ASCII, at most ${MAX_HEADER_VALUE_LENGTH} characters`);
      }
    });
  });
  return out;
}

/** Target headers as fetch headers: one header per name, values joined with ", ". */
export function toHeaderPairs(headers: readonly WebhookHeader[]): Array<[string, string]> {
  return headers.filter((h) => !isReservedHeader(h.name)).flatMap((h) => h.values.map((v) => [h.name, v] as [string, string]));
}

// Addresses a webhook must not reach unless PAYD_WEBHOOK_ALLOW_PRIVATE_TARGETS is on:
// loopback, private, link-local (cloud metadata), CGNAT, multicast and reserved ranges.
// BlockList applies the IPv4 rules to IPv4-mapped IPv6 addresses (::ffff:127.0.0.1) too.
const blocked = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) blocked.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 128], ['::1', 128], ['64:ff9b::', 96], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8],
] as const) blocked.addSubnet(net, prefix, 'ipv6');

export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  return blocked.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/**
 * Refuses a URL whose host is or resolves to a non-public address (SSRF guard). The
 * check resolves the name just before the call; see docs/webhooks.md for its limits.
 */
export async function publicTargetProblem(rawUrl: string): Promise<string | undefined> {
  const host = new URL(rawUrl).hostname.replace(/^\[|\]$/g, '');
  const addresses = isIP(host) ? [host] : (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
  const refused = addresses.find(isPrivateAddress);
  if (refused !== undefined || addresses.length === 0) {
    return `refused: ${host} resolves to the non-public address ${refused ?? '(none)'} (PAYD_WEBHOOK_ALLOW_PRIVATE_TARGETS is off)`;
  }
  return undefined;
}
