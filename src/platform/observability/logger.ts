// pino options shared by the server and the CLI. Secrets and card data are redacted
// wherever they might appear in a logged object.
import pino, { type LoggerOptions } from 'pino';

export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  'headers.authorization',
  'headers["x-api-key"]',
  '*.api_key',
  '*.apiKey',
  '*.access_token',
  '*.id_token',
  '*.refresh_token',
  '*.client_secret',
  '*.password',
  '*.card_number',
  '*.cardNumber',
  '*.pan',
  '*.cvv',
  '*.cvc',
  '*.card.number',
  '*.card.cvv',
  '*.instrument.number',
  '*.instrument.cvv',
];

/**
 * Query (and fragment) parameters whose value is a credential, matched by name without
 * regard to case (percent-encoded names too): the checkout session of old hosted-page
 * links, reset and invitation links (token), OAuth codes and tokens, the SDK's one-time
 * tkn, client secrets and assertions, PKCE verifiers, id_token_hint, passwords, the
 * messenger's account-linking token. Not state: a CSRF binding the browser shows in its
 * address bar anyway, and the one value that ties a log line to a client's request.
 */
export const SECRET_QUERY_PARAMS = [
  'session', 'token', 'access_token', 'refresh_token', 'id_token', 'id_token_hint', 'code', 'authorization_code', 'tkn',
  'client_secret', 'client_assertion', 'assertion', 'code_verifier', 'password', 'account_linking_token', 'api_key',
];

const redactParams = (params: string) => params.split('&').map((pair) => {
  const eq = pair.indexOf('=');
  const name = decodeURIComponentSafe(eq < 0 ? pair : pair.slice(0, eq));
  return SECRET_QUERY_PARAMS.includes(name.toLowerCase()) ? `${pair.slice(0, eq < 0 ? pair.length : eq)}=[redacted]` : pair;
}).join('&');

/** A URL as it may be logged or kept: the values of SECRET_QUERY_PARAMS, in its query and its fragment, replaced by [redacted]. */
export function redactUrl(url: string): string {
  const hash = url.indexOf('#');
  const fragment = hash < 0 ? undefined : url.slice(hash + 1);
  const rest = hash < 0 ? url : url.slice(0, hash);
  const q = rest.indexOf('?');
  const redacted = q < 0 ? rest : `${rest.slice(0, q)}?${redactParams(rest.slice(q + 1))}`;
  return fragment === undefined ? redacted : `${redacted}#${redactParams(fragment)}`;
}

/** A text (a mail body) with every http(s) URL in it passed through redactUrl. */
export function redactLinks(text: string): string {
  return text.replace(/https?:\/\/[^\s<>"']+/g, (url) => redactUrl(url));
}

function decodeURIComponentSafe(s: string): string {
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    return s;
  }
}

interface LoggedRequest {
  method?: string;
  url?: string;
  headers?: Record<string, unknown>;
  host?: string;
  ip?: string;
  socket?: { remotePort?: number };
}

export function loggerOptions(level: string): LoggerOptions {
  return {
    level,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    // Fastify's request serializer, with credentials taken out of the query string.
    serializers: {
      req: (req: LoggedRequest) => ({
        method: req.method,
        url: typeof req.url === 'string' ? redactUrl(req.url) : req.url,
        version: req.headers?.['accept-version'],
        host: req.host,
        remoteAddress: req.ip,
        remotePort: req.socket?.remotePort,
      }),
    },
    base: { service: 'payd' },
    timestamp: () => `,"time":"${new Date().toISOString()}"`,
  };
}

/** The pino logger methods a line needs (Fastify's request logger, pino's). */
interface LineLogger {
  info(obj: object, msg: string): void;
  child(bindings: object, options?: { redact?: string[] }): LineLogger;
}

/**
 * For lines of a fixed shape built by the serializers above: writes `obj` at info on a
 * logger (its bindings, level, serializers, mixin and stream) without pino's redaction
 * pass. The request's "request completed" line is one: its req is the req serializer's
 * (no header but accept-version, the URL through redactUrl), its res Fastify's (the status
 * code), its time a number, its message fixed; no redaction path can match in it, so the
 * pass, which @pinojs/redact does by parsing every path for every field of every line,
 * finds nothing there at about 10 µs a line. Every other line, whose objects come from
 * the code (errors, bodies, headers), keeps it.
 * The logger's stringifiers are swapped for the line and put back: a view made with
 * Object.create(logger) would make each request's logger a prototype, which V8 reshapes,
 * at 5 µs a request (half the line's cost).
 */
export function withoutRedaction(any: LineLogger): (logger: LineLogger, obj: object, msg: string) => void {
  const sym = pino.symbols.stringifiersSym;
  const plain = (any.child({}, { redact: [] }) as unknown as Record<symbol, unknown>)[sym];
  return (logger, obj, msg) => {
    const own = logger as unknown as Record<symbol, unknown>;
    const saved = own[sym];
    own[sym] = plain;
    try {
      logger.info(obj, msg);
    } finally {
      own[sym] = saved;
    }
  };
}
