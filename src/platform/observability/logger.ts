// pino options shared by the server and the CLI. Secrets and card data are redacted
// wherever they might appear in a logged object.
import type { LoggerOptions } from 'pino';

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

/** Query parameters whose value is a credential (the checkout session of old hosted-page links). */
export const SECRET_QUERY_PARAMS = ['session'];

/** A request URL as it may be logged: the values of SECRET_QUERY_PARAMS replaced by [redacted]. */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const query = url.slice(q + 1).split('&').map((pair) => {
    const eq = pair.indexOf('=');
    const name = decodeURIComponentSafe(eq < 0 ? pair : pair.slice(0, eq));
    return SECRET_QUERY_PARAMS.includes(name.toLowerCase()) ? `${pair.slice(0, eq < 0 ? pair.length : eq)}=[redacted]` : pair;
  });
  return `${url.slice(0, q)}?${query.join('&')}`;
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
