// pino options shared by the server and the CLI. Secrets and card data are redacted
// wherever they might appear in a logged object.
import { writeSync } from 'node:fs';
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
    timestamp: isoTime,
  };
}

// The line's time as pino's isoTime writes it, its date and second formatted once a
// second (a Date and its ISO string for every line was 1 % of a token request).
let second = Number.NaN;
let secondPrefix = '';
function isoTime(): string {
  const now = Date.now();
  const ms = now % 1000;
  if (now - ms !== second) {
    second = now - ms;
    secondPrefix = `,"time":"${new Date(second).toISOString().slice(0, 20)}`;
  }
  return `${secondPrefix}${ms < 10 ? '00' : ms < 100 ? '0' : ''}${ms}Z"`;
}

/** The pino logger methods a line needs (Fastify's request logger, pino's). */
interface LineLogger {
  info(obj: object, msg: string): void;
  child(bindings: object, options?: object): LineLogger;
}

// pino's stringifiers without redaction paths, taken once from a child made with none.
let plainStringifiers: unknown;
const STRINGIFIERS = pino.symbols.stringifiersSym;

/** Runs fn with the logger's stringifiers swapped for ones without redaction, then puts them back. */
function unredacted<T>(logger: LineLogger, fn: () => T): T {
  const own = logger as unknown as Record<symbol, unknown>;
  plainStringifiers ??= (logger.child({}, { redact: [] }) as unknown as Record<symbol, unknown>)[STRINGIFIERS];
  const saved = own[STRINGIFIERS];
  own[STRINGIFIERS] = plainStringifiers;
  try {
    return fn();
  } finally {
    own[STRINGIFIERS] = saved;
  }
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
export function writeUnredacted(logger: LineLogger, obj: object, msg: string): void {
  unredacted(logger, () => logger.info(obj, msg));
}

/** The bindings of a request's logger: Fastify's request id, and the span's ids when tracing. */
const REQUEST_BINDINGS: ReadonlySet<string> = new Set(['reqId', 'trace_id', 'span_id']);

/**
 * logger.child(bindings, options), for a request's logger: pino passes each binding
 * through the redaction paths' stringifiers when it makes the child, which finds nothing
 * to hide in a request id or a span id (strings; no path is a top-level name) at about 2 %
 * of a token request. Bindings of these names and string values skip that pass; any other
 * binding keeps it. The child itself redacts every line it writes, as its parent does.
 */
export function requestChild<L extends LineLogger>(logger: L, bindings: Record<string, unknown>, options?: object): L {
  for (const key in bindings) {
    if (!REQUEST_BINDINGS.has(key) || typeof bindings[key] !== 'string') return logger.child(bindings, options) as L;
  }
  return unredacted(logger, () => logger.child(bindings, options)) as L;
}

/** What pino needs of a destination, and the flushes its exit handling calls. */
export interface LogDestination {
  write(line: string): boolean;
  flush(cb?: (err?: Error) => void): void;
  flushSync(): void;
}

const PIECE = 12 * 1024;

/**
 * payd's stdout for its logs: pino's destination (sonic-boom), synchronous, handed the
 * lines of one turn of the event loop together at the turn's end (PIECE at a time): one
 * write(2) a turn or a few. Synchronous, as pino's own default for stdout: an asynchronous
 * write runs on libuv's thread pool, and one still under way when the process exits lands
 * after the lines written at exit, out of order. sonic-boom measures the UTF-8 length of
 * the string it has pending for every write it is given, 4 % of a token request's main
 * thread when it was given each line; now it measures each piece. A line waits at most
 * until the end of its turn; at exit (process.exit, a crash) what waits is written then.
 */
export function turnBatched(dest: LogDestination & { fd: number } = pino.destination({ dest: 1, sync: true }) as never): LogDestination {
  let parts: string[] = [];
  let scheduled = false;
  // In pieces of up to about sonic-boom's largest write (16 KB): a pipe takes 64 KB at a time.
  const drain = () => {
    scheduled = false;
    let piece = '';
    for (const line of parts) {
      if (piece.length > 0 && piece.length + line.length > PIECE) {
        dest.write(piece);
        piece = '';
      }
      piece += line;
    }
    parts = [];
    if (piece.length > 0) dest.write(piece);
  };
  // What waits, written at once: after what sonic-boom has pending, with writeSync.
  const writeNow = () => {
    if (parts.length === 0) return;
    const chunk = parts.join('');
    parts = [];
    try {
      dest.flushSync();
      const bytes = Buffer.from(chunk);
      let again = 0;
      for (let off = 0; off < bytes.length;) {
        try {
          off += writeSync(dest.fd, bytes, off);
        } catch (err) {
          // A non-blocking pipe that is full: wait for its reader, a while (as sonic-boom does).
          if ((err as NodeJS.ErrnoException).code !== 'EAGAIN' || ++again > 100) throw err;
          Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
        }
      }
    } catch {
      // stdout is gone (EPIPE), or its reader does not read: what is left cannot be written.
    }
  };
  process.once('exit', writeNow);
  return {
    write(line) {
      parts.push(line);
      if (!scheduled) {
        scheduled = true;
        setImmediate(drain);
      }
      return true;
    },
    flush(cb) {
      drain();
      dest.flush(cb);
    },
    flushSync() {
      writeNow();
      dest.flushSync();
    },
  };
}
