// The languages shoppers read payd in, and the one decision of which: used by payd's
// pages, its answers to the widget, the widget (bundled) and the card frame. No
// dependency, so that the widget bundle stays small. Each language is one file of
// strings in src/web/locales/ (English is the reference: its keys are the keys);
// adding one is that file and its line in LANGUAGES below.
import en from './locales/en.ts';
import fr from './locales/fr.ts';

export type MessageKey = keyof typeof en.messages;

export interface Language {
  /** The language subtag (BCP 47), as in <html lang> and the `lang` parameter. */
  tag: string;
  /** The Intl locale amounts and dates are formatted in. */
  intl: string;
  /** The language's name in itself (the switch). */
  name: string;
  messages: Record<MessageKey, string>;
}

const LANGUAGES = [en, fr] as const satisfies readonly Language[];

export type Locale = (typeof LANGUAGES)[number]['tag'];
export const LOCALES: readonly Locale[] = LANGUAGES.map((l) => l.tag);
const BY_TAG = Object.fromEntries(LANGUAGES.map((l) => [l.tag, l])) as Record<Locale, Language>;

/** The message in the locale, with {placeholders} filled. */
export function t(locale: Locale, key: MessageKey, values: Record<string, string | number> = {}): string {
  return BY_TAG[locale].messages[key].replace(/\{(\w+)\}/g, (m, name: string) => (name in values ? String(values[name]) : m));
}

/** Whether a message key exists (for keys built at run time, e.g. decline_{reason}). */
export function hasMessage(key: string): key is MessageKey {
  return Object.prototype.hasOwnProperty.call(en.messages, key);
}

/** A supported locale for a language tag ("fr-CA" -> fr), or undefined. */
export function localeOf(tag: unknown): Locale | undefined {
  if (typeof tag !== 'string') return undefined;
  const lang = tag.trim().toLowerCase().split(/[-_]/)[0];
  return LOCALES.find((l) => l === lang);
}

/**
 * The language decision, the one for every shopper page and message: the shopper's
 * explicit choice (the language switch, or a widget mounted with `locale`), else the
 * merchant's for the session (its customer's `locale`) when supported, else the best of
 * the browser's Accept-Language (by q-value, in order), else English.
 */
export function pickLocale(acceptLanguage: string | undefined, merchant?: unknown, explicit?: unknown): Locale {
  const chosen = localeOf(explicit) ?? localeOf(merchant);
  if (chosen) return chosen;
  const ranked = (acceptLanguage ?? '').split(',').map((part, i) => {
    const [tag, ...params] = part.trim().split(';');
    const q = Number(params.map((p) => p.trim()).find((p) => p.startsWith('q='))?.slice(2) ?? 1);
    return { tag, q: Number.isFinite(q) ? q : 0, i };
  }).filter((x) => x.tag && x.q > 0).sort((a, b) => b.q - a.q || a.i - b.i);
  for (const { tag } of ranked) {
    const l = localeOf(tag);
    if (l) return l;
  }
  return 'en';
}

/** The Intl locale amounts and dates of a page are formatted in. */
export function intlLocale(locale: Locale): string {
  return BY_TAG[locale].intl;
}

/** Every language, with its name in itself (the language switch). */
export function languages(): ReadonlyArray<{ tag: Locale; name: string }> {
  return LANGUAGES;
}

/** Shopper-facing name of a payment method (never the raw enum). */
export function methodLabel(locale: Locale, method: string): string {
  const key = `method_${method}`;
  if (hasMessage(key)) return t(locale, key);
  const words = method.replace(/_/g, ' ').toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
}
