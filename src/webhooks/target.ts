// Where a webhook goes: a URL and extra headers in the spec's shape
// ([{ name, values: [...] }]). Validation shared by the operator API, enqueueEvent and
// (through validateWebhookTarget) the payment-link module; the SSRF guard used at
// delivery time.
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
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
// Every textual form is parsed first: IPv4 in any notation the URL parser accepts
// (0x7f.1, 2130706433, 0177.0.0.1, 127.1 all mean 127.0.0.1), and IPv6 forms that carry
// an IPv4 address (IPv4-mapped ::ffff:a.b.c.d, IPv4-compatible ::a.b.c.d, IPv4-translated
// ::ffff:0:a.b.c.d, NAT64 64:ff9b::/96, 6to4 2002::/16, Teredo 2001::/32), whose
// embedded address is then checked like any IPv4 address. Any other IPv6 address must be
// global unicast (2000::/3) outside the special-purpose and documentation blocks.

/** IPv4 blocks that are not the public internet (RFC 6890 and friends), with a reason. */
const IPV4_BLOCKS: Array<[string, number, string]> = [
  ['0.0.0.0', 8, 'this network (0.0.0.0/8)'],
  ['10.0.0.0', 8, 'private (10.0.0.0/8)'],
  ['100.64.0.0', 10, 'shared address space / CGNAT (100.64.0.0/10)'],
  ['127.0.0.0', 8, 'loopback (127.0.0.0/8)'],
  ['169.254.0.0', 16, 'link-local, cloud metadata (169.254.0.0/16)'],
  ['172.16.0.0', 12, 'private (172.16.0.0/12)'],
  ['192.0.0.0', 24, 'IETF protocol assignments (192.0.0.0/24)'],
  ['192.0.2.0', 24, 'documentation (192.0.2.0/24)'],
  ['192.88.99.0', 24, '6to4 relay anycast (192.88.99.0/24)'],
  ['192.168.0.0', 16, 'private (192.168.0.0/16)'],
  ['198.18.0.0', 15, 'benchmarking (198.18.0.0/15)'],
  ['198.51.100.0', 24, 'documentation (198.51.100.0/24)'],
  ['203.0.113.0', 24, 'documentation (203.0.113.0/24)'],
  ['224.0.0.0', 4, 'multicast (224.0.0.0/4)'],
  ['240.0.0.0', 4, 'reserved or broadcast (240.0.0.0/4, 255.255.255.255)'],
];

const v4Number = (dotted: string): number =>
  dotted.split('.').reduce((n, part) => n * 256 + Number(part), 0);

const IPV4_RANGES = IPV4_BLOCKS.map(([net, bits, why]) => {
  const size = 2 ** (32 - bits);
  const start = v4Number(net);
  return { start, end: start + size - 1, why };
});

/** Why an IPv4 address (as a 32-bit number) is not public, or undefined. */
function ipv4Problem(n: number): string | undefined {
  return IPV4_RANGES.find((r) => n >= r.start && n <= r.end)?.why;
}

const dotted = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');

/** The eight 16-bit groups of an IPv6 address (zone id ignored), or undefined when it is not one. */
export function parseIPv6(text: string): number[] | undefined {
  let a = text.trim().toLowerCase().replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  if (isIP(a) !== 6) return undefined;
  const lastColon = a.lastIndexOf(':');
  const tail = a.slice(lastColon + 1);
  if (tail.includes('.')) {
    if (isIP(tail) !== 4) return undefined;
    const n = v4Number(tail);
    a = `${a.slice(0, lastColon + 1)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const halves = a.split('::');
  if (halves.length > 2) return undefined;
  const groups = (h: string | undefined) => (h ? h.split(':') : []);
  const head = groups(halves[0]);
  const rest = groups(halves[1]);
  const missing = 8 - head.length - rest.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  const all = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...rest];
  if (all.some((g) => !/^[0-9a-f]{1,4}$/.test(g))) return undefined;
  return all.map((g) => parseInt(g, 16));
}

const embedded = (hi: number, lo: number) => ((hi << 16) >>> 0) + lo;

/** Why an IPv6 address (eight groups) is not public, or undefined. */
function ipv6Problem(w: number[]): string | undefined {
  const [w0, w1, w2, w3, w4, w5, w6, w7] = w as [number, number, number, number, number, number, number, number];
  const via = (kind: string, n: number) => {
    const why = ipv4Problem(n);
    return why ? `${kind} of ${dotted(n)}, ${why}` : undefined;
  };
  const zeroTo = (k: number) => w.slice(0, k).every((g) => g === 0);
  if (zeroTo(8)) return 'unspecified (::)';
  if (zeroTo(7) && w7 === 1) return 'loopback (::1)';
  if (zeroTo(5) && w5 === 0xffff) return via('IPv4-mapped form', embedded(w6, w7)) ;
  if (zeroTo(4) && w4 === 0xffff && w5 === 0) return via('IPv4-translated form', embedded(w6, w7));
  if (zeroTo(6)) return via('IPv4-compatible form', embedded(w6, w7)) ?? 'IPv4-compatible form (::/96, deprecated)';
  if (w0 === 0x64 && w1 === 0xff9b && w2 === 0 && w3 === 0 && w4 === 0 && w5 === 0) return via('NAT64 form', embedded(w6, w7));
  if (w0 === 0x64 && w1 === 0xff9b && w2 === 1) return 'local-use NAT64 (64:ff9b:1::/48)';
  if (w0 === 0x2002) return via('6to4 form', embedded(w1, w2));
  if (w0 === 0x2001 && w1 === 0) {
    return via('Teredo server', embedded(w2, w3)) ?? via('Teredo client', embedded(w6 ^ 0xffff, w7 ^ 0xffff));
  }
  if (w0 === 0x2001 && w1 === 0x0db8) return 'documentation (2001:db8::/32)';
  if (w0 === 0x3fff && w1 < 0x1000) return 'documentation (3fff::/20)';
  if (w0 === 0x2001 && w1 < 0x0200) return 'IETF special-purpose (2001::/23)';
  if ((w0 & 0xfe00) === 0xfc00) return 'unique local (fc00::/7)';
  if ((w0 & 0xffc0) === 0xfe80) return 'link-local (fe80::/10)';
  if ((w0 & 0xffc0) === 0xfec0) return 'site-local (fec0::/10)';
  if ((w0 & 0xff00) === 0xff00) return 'multicast (ff00::/8)';
  if ((w0 & 0xe000) !== 0x2000) return 'not global unicast (outside 2000::/3)';
  return undefined;
}

/**
 * Why `address` is not a public internet address (undefined when it is). Accepts IPv4
 * and IPv6 in any notation the WHATWG URL parser reads as an IP (brackets, zone ids, hex,
 * octal, short and integer IPv4 forms); anything that is not an IP address is refused.
 */
export function addressProblem(address: string): string | undefined {
  let text = address.trim().replace(/^\[|\]$/g, '');
  if (isIP(text) === 0 && isIP(text.replace(/%.*$/, '')) !== 6) {
    try {
      text = new URL(`http://${text.includes(':') ? `[${text}]` : text}/`).hostname.replace(/^\[|\]$/g, '');
    } catch {
      return 'not an IP address';
    }
  }
  if (isIP(text) === 4) return ipv4Problem(v4Number(text));
  const groups = parseIPv6(text);
  return groups ? ipv6Problem(groups) : 'not an IP address';
}

export function isPrivateAddress(address: string): boolean {
  return addressProblem(address) !== undefined;
}

/** The host of a URL as a literal IP address (WHATWG-normalised), or undefined for a name. */
export function literalHost(rawUrl: string): string | undefined {
  const host = new URL(rawUrl).hostname.replace(/^\[|\]$/g, '');
  return isIP(host) ? host : undefined;
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
  const host = new URL(rawUrl).hostname.replace(/^\[|\]$/g, '');
  const addresses = isIP(host) ? [host] : (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
  for (const a of addresses) {
    const why = addressProblem(a);
    if (why) return `refused: ${host} resolves to the non-public address ${a}, ${why} (PAYD_WEBHOOK_ALLOW_PRIVATE_TARGETS is off)`;
  }
  if (addresses.length === 0) return `refused: ${host} resolves to no address`;
  return undefined;
}
