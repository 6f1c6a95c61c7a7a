// payd's answers to the shopper's browser (the checkout API under /checkout/v1/, which
// the widget and the card frame call) in the shopper's language. A problem the checkout
// raises for the shopper carries the key of its words (inShopperWords); its English
// detail is those words in English. In another language the detail (and each
// invalid_params reason) is said again in that language: the problem's own words when
// it has them, else the words of its kind (invalid input, closed session, conflict, too
// many requests, unavailable). type, title and the field names stay as they are (they
// are for programs); the merchant-facing API is not touched.
import type { InvalidParam } from '../platform/http/problem.ts';
import { type Locale, type MessageKey, t } from '../web/i18n.ts';

interface Words { key: MessageKey; values: Record<string, string | number> }
const WORDS = new WeakMap<object, Words>();

/** Marks a problem as said to the shopper in these words (their English is its detail). */
export function inShopperWords<P extends object>(problem: P, key: MessageKey, values: Record<string, string | number> = {}): P {
  WORDS.set(problem, { key, values });
  return problem;
}

export function shopperWordsOf(err: unknown): Words | undefined {
  return typeof err === 'object' && err !== null ? WORDS.get(err) : undefined;
}

/** The words of a problem without its own, by its status. */
function wordsOfKind(status: number, hasInvalidParams: boolean): MessageKey {
  if (status === 400 && hasInvalidParams) return 'problemInvalid';
  if (status === 401) return 'errCredential';
  if (status === 409) return 'problemConflict';
  if (status === 429) return 'problemTooMany';
  if (status >= 500) return 'problemUnavailable';
  return 'problemOther';
}

/** A problem+json body said in the shopper's language (English bodies are already). */
export function localizeProblemBody(body: Record<string, unknown>, locale: Locale, words?: Words): Record<string, unknown> {
  if (locale === 'en') return body;
  const params = Array.isArray(body.invalid_params) ? body.invalid_params as InvalidParam[] : undefined;
  const detail = words ? t(locale, words.key, words.values) : t(locale, wordsOfKind(Number(body.status), !!params?.length));
  return {
    ...body,
    ...(body.detail !== undefined || words ? { detail } : {}),
    ...(params ? { invalid_params: params.map((p) => ({ ...p, reason: words ? detail : t(locale, 'reasonInvalid', { field: p.name }) })) } : {}),
  };
}
