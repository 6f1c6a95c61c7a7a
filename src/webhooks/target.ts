// Where a webhook goes: a URL and extra headers in the spec's shape
// ([{ name, values: [...] }]). Validation shared by the operator API, enqueueEvent and
// (through validateWebhookTarget) the payment-link module; the SSRF guard used at
// delivery time.
import { lookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';
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

/**
 * Every problem of a target, each named with `prefix` (e.g. "webhook." or ""). With
 * allowPrivateTargets false (registration of an endpoint or a link's webhook while
 * PAYD_WEBHOOK_ALLOW_PRIVATE_TARGETS is off), a URL whose host is a non-public IP
 * literal is refused too; host names are checked at each call.
 */
export function validateWebhookTarget(target: unknown, prefix = '', opts: { allowPrivateTargets?: boolean } = {}): InvalidParam[] {
  const out: InvalidParam[] = [];
  const bad = (name: string, reason: string) => out.push({ name: `${prefix}${name}`, in: 'body', reason });
  if (typeof target !== 'object' || target === null) {
    bad(prefix ? prefix.replace(/\.$/, '') : 'body', 'must be an object with url and headers');
    return out;
  }
  const { url, headers } = target as Record<string, unknown>;
  if (typeof url !== 'string') bad('url', 'must be a string');
  else {
    const why = urlProblem(url) ?? (opts.allowPrivateTargets === false ? literalTargetProblem(url) : undefined);
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

/** Target headers as (name, value) pairs, one per value, reserved names left out. */
export function toHeaderPairs(headers: readonly WebhookHeader[]): Array<[string, string]> {
  return headers.filter((h) => !isReservedHeader(h.name)).flatMap((h) => h.values.map((v) => [h.name, v] as [string, string]));
}

// Addresses a webhook must not reach unless PAYD_WEBHOOK_ALLOW_PRIVATE_TARGETS is on.
// Every textual form is first read as the WHATWG URL parser reads a host (the parser that
// decides where a call goes): IPv4 in any notation it accepts (0x7f.1, 2130706433,
// 0177.0.0.1, 127.1 all mean 127.0.0.1), IPv6 with brackets or a zone id. ipaddr.js then
// parses the canonical form and matches it against the ranges below. (It does not read
// the notations directly: its IPv4 notations are not exactly the URL parser's, and it
// takes ::a.b.c.d for IPv4-mapped where RFC 4291 makes it IPv4-compatible.)
// IPv6 forms that carry an IPv4 address (IPv4-mapped ::ffff:a.b.c.d, IPv4-compatible
// ::a.b.c.d, IPv4-translated ::ffff:0:a.b.c.d, NAT64 64:ff9b::/96, 6to4 2002::/16, Teredo
// 2001::/32) have their embedded address checked like any IPv4 address. Any other IPv6
// address must be global unicast (2000::/3) outside the special-purpose and
// documentation blocks.

type Ranges<T extends ipaddr.IPv4 | ipaddr.IPv6> = Record<string, Array<[T, number]>>;

/** Named ranges for ipaddr.subnetMatch (the first that holds the address names it). */
function ranges<T extends ipaddr.IPv4 | ipaddr.IPv6>(table: Record<string, string[]>): Ranges<T> {
  return Object.fromEntries(Object.entries(table).map(([name, cidrs]) => [name, cidrs.map((c) => ipaddr.parseCIDR(c) as [T, number])]));
}

/** IPv4 blocks that are not the public internet (RFC 6890 and friends), named by the reason. */
const IPV4_BLOCKS = ranges<ipaddr.IPv4>({
  'this network (0.0.0.0/8)': ['0.0.0.0/8'],
  'private (10.0.0.0/8)': ['10.0.0.0/8'],
  'shared address space / CGNAT (100.64.0.0/10)': ['100.64.0.0/10'],
  'loopback (127.0.0.0/8)': ['127.0.0.0/8'],
  'link-local, cloud metadata (169.254.0.0/16)': ['169.254.0.0/16'],
  'private (172.16.0.0/12)': ['172.16.0.0/12'],
  'IETF protocol assignments (192.0.0.0/24)': ['192.0.0.0/24'],
  'documentation (192.0.2.0/24)': ['192.0.2.0/24'],
  '6to4 relay anycast (192.88.99.0/24)': ['192.88.99.0/24'],
  'private (192.168.0.0/16)': ['192.168.0.0/16'],
  'benchmarking (198.18.0.0/15)': ['198.18.0.0/15'],
  'documentation (198.51.100.0/24)': ['198.51.100.0/24'],
  'documentation (203.0.113.0/24)': ['203.0.113.0/24'],
  'multicast (224.0.0.0/4)': ['224.0.0.0/4'],
  'reserved or broadcast (240.0.0.0/4, 255.255.255.255)': ['240.0.0.0/4'],
});

/** Why an IPv4 address is not public, or undefined. */
function ipv4Problem(ip: ipaddr.IPv4): string | undefined {
  const why = ipaddr.subnetMatch(ip, IPV4_BLOCKS, '');
  return why || undefined;
}

/** IPv6 blocks in the order they are told apart (::/96 holds :: and ::1, 2001::/23 holds Teredo). */
const IPV6_BLOCKS = ranges<ipaddr.IPv6>({
  unspecified: ['::/128'],
  loopback: ['::1/128'],
  mapped: ['::ffff:0:0/96'],
  translated: ['::ffff:0:0:0/96'],
  compatible: ['::/96'],
  nat64: ['64:ff9b::/96'],
  nat64Local: ['64:ff9b:1::/48'],
  sixToFour: ['2002::/16'],
  teredo: ['2001::/32'],
  documentation: ['2001:db8::/32'],
  documentation3fff: ['3fff::/20'],
  ietf: ['2001::/23'],
  uniqueLocal: ['fc00::/7'],
  linkLocal: ['fe80::/10'],
  siteLocal: ['fec0::/10'],
  multicast: ['ff00::/8'],
  globalUnicast: ['2000::/3'],
});

/** The IPv4 address in two 16-bit groups of an IPv6 address. */
const embedded = (hi: number, lo: number) => new ipaddr.IPv4([hi >> 8, hi & 255, lo >> 8, lo & 255]);

/** Why an IPv6 address is not public, or undefined. */
function ipv6Problem(ip: ipaddr.IPv6): string | undefined {
  const p = ip.parts as [number, number, number, number, number, number, number, number];
  const via = (kind: string, v4: ipaddr.IPv4) => {
    const why = ipv4Problem(v4);
    return why ? `${kind} of ${v4.toString()}, ${why}` : undefined;
  };
  switch (ipaddr.subnetMatch(ip, IPV6_BLOCKS, 'other')) {
    case 'unspecified': return 'unspecified (::)';
    case 'loopback': return 'loopback (::1)';
    case 'mapped': return via('IPv4-mapped form', embedded(p[6], p[7]));
    case 'translated': return via('IPv4-translated form', embedded(p[6], p[7]));
    case 'compatible': return via('IPv4-compatible form', embedded(p[6], p[7])) ?? 'IPv4-compatible form (::/96, deprecated)';
    case 'nat64': return via('NAT64 form', embedded(p[6], p[7]));
    case 'nat64Local': return 'local-use NAT64 (64:ff9b:1::/48)';
    case 'sixToFour': return via('6to4 form', embedded(p[1], p[2]));
    case 'teredo': return via('Teredo server', embedded(p[2], p[3])) ?? via('Teredo client', embedded(p[6] ^ 0xffff, p[7] ^ 0xffff));
    case 'documentation': return 'documentation (2001:db8::/32)';
    case 'documentation3fff': return 'documentation (3fff::/20)';
    case 'ietf': return 'IETF special-purpose (2001::/23)';
    case 'uniqueLocal': return 'unique local (fc00::/7)';
    case 'linkLocal': return 'link-local (fe80::/10)';
    case 'siteLocal': return 'site-local (fec0::/10)';
    case 'multicast': return 'multicast (ff00::/8)';
    case 'globalUnicast': return undefined;
    default: return 'not global unicast (outside 2000::/3)';
  }
}

/**
 * The address as the WHATWG URL parser reads a host (brackets and an IPv6 zone id
 * dropped), parsed by ipaddr.js; undefined when it is not an IP address.
 */
function parseAddress(address: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  const text = address.trim().replace(/^\[|\]$/g, '');
  const v6 = text.includes(':');
  let host: string;
  try {
    host = new URL(`http://${v6 ? `[${text.replace(/%.*$/, '')}]` : text}/`).hostname.replace(/^\[|\]$/g, '');
  } catch {
    return undefined;
  }
  if (v6 ? !ipaddr.IPv6.isValid(host) : !ipaddr.IPv4.isValidFourPartDecimal(host)) return undefined; // a name
  return ipaddr.parse(host);
}

/** The eight 16-bit groups of an IPv6 address (zone id ignored), or undefined when it is not one. */
export function parseIPv6(text: string): number[] | undefined {
  const ip = text.includes(':') ? parseAddress(text) : undefined;
  return ip instanceof ipaddr.IPv6 ? ip.parts : undefined;
}

/**
 * Why `address` is not a public internet address (undefined when it is). Accepts IPv4
 * and IPv6 in any notation the WHATWG URL parser reads as an IP (brackets, zone ids, hex,
 * octal, short and integer IPv4 forms); anything that is not an IP address is refused.
 */
export function addressProblem(address: string): string | undefined {
  const ip = parseAddress(address);
  if (!ip) return 'not an IP address';
  return ip instanceof ipaddr.IPv6 ? ipv6Problem(ip) : ipv4Problem(ip);
}

export function isPrivateAddress(address: string): boolean {
  return addressProblem(address) !== undefined;
}

/** A URL's hostname as an IP literal (canonical, as the URL parser writes it), or undefined for a name. */
const ipLiteral = (hostname: string): string | undefined => {
  const host = hostname.replace(/^\[|\]$/g, '');
  return ipaddr.IPv6.isValid(host) || ipaddr.IPv4.isValidFourPartDecimal(host) ? host : undefined;
};

/** The host of a URL as a literal IP address (WHATWG-normalised), or undefined for a name. */
export function literalHost(rawUrl: string): string | undefined {
  return ipLiteral(new URL(rawUrl).hostname);
}

/**
 * Why a URL's host, when it is an IP literal, cannot be called (registration-time
 * check); names are checked when the call is made, as they may resolve differently then.
 */
export function literalTargetProblem(rawUrl: string): string | undefined {
  let host: string | undefined;
  try {
    host = literalHost(rawUrl);
  } catch {
    return undefined; // urlProblem reports it
  }
  const why = host === undefined ? undefined : addressProblem(host);
  return why ? `must not point to a non-public address (${host}: ${why}); PAYD_WEBHOOK_ALLOW_PRIVATE_TARGETS is off` : undefined;
}

/**
 * Why a URL's host is or resolves to a non-public address (any of its addresses), or
 * undefined. A diagnostic: calls do not rely on it, since a name may resolve
 * differently a moment later; send.ts checks the addresses in the connection's own
 * lookup instead (see docs/webhooks.md).
 */
export async function publicTargetProblem(rawUrl: string): Promise<string | undefined> {
  const hostname = new URL(rawUrl).hostname;
  const host = hostname.replace(/^\[|\]$/g, '');
  const addresses = ipLiteral(hostname) ? [host] : (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
  for (const a of addresses) {
    const why = addressProblem(a);
    if (why) return `refused: ${host} resolves to the non-public address ${a}, ${why} (PAYD_WEBHOOK_ALLOW_PRIVATE_TARGETS is off)`;
  }
  if (addresses.length === 0) return `refused: ${host} resolves to no address`;
  return undefined;
}
