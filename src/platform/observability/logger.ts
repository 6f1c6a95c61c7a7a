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

export function loggerOptions(level: string): LoggerOptions {
  return {
    level,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    base: { service: 'payd' },
    timestamp: () => `,"time":"${new Date().toISOString()}"`,
  };
}
