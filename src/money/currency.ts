// The currencies payd accepts and their minor units (ISO 4217 exponent): the one table
// every amount shown or typed goes through (API validation, the dashboard, the widget's
// bundle: this file imports nothing). Amounts travel in minor units; ¥1,000 is 1000, €10.00
// is 1000.
export const CURRENCY_DIGITS: Readonly<Record<string, number>> = { EUR: 2, USD: 2, GBP: 2, CHF: 2, JPY: 0, SEK: 2, DKK: 2, NOK: 2, PLN: 2, CZK: 2 };

/** The currency's minor-unit digits (2 for a code payd does not know). */
export const digitsOf = (currency: string): number => CURRENCY_DIGITS[currency] ?? 2;

/** Minor units as major units, with grouping: 123456 EUR → "1,234.56", 1000 JPY → "1,000". */
export function majorText(minor: number, currency: string, grouping = true): string {
  const digits = digitsOf(currency);
  const sign = minor < 0 ? '-' : '';
  const abs = Math.abs(minor);
  const unit = 10 ** digits;
  const whole = grouping ? Math.floor(abs / unit).toLocaleString('en-US') : String(Math.floor(abs / unit));
  return digits ? `${sign}${whole}.${String(abs % unit).padStart(digits, '0')}` : `${sign}${whole}`;
}

/** Major units as typed ("12.5", "12,50", "1000") to minor units of the currency; undefined when it is not such an amount (more decimals than the currency has). */
export function minorOf(text: string, currency: string): number | undefined {
  const digits = digitsOf(currency);
  const m = /^\s*(\d{1,12})(?:[.,](\d+))?\s*$/.exec(text);
  if (!m || (m[2] !== undefined && m[2].length > digits)) return undefined;
  return Number(m[1]) * 10 ** digits + Number((m[2] ?? '').padEnd(digits, '0') || '0');
}

/** How to write an amount in this currency, for error messages: "12.50" or "1000". */
export const exampleAmount = (currency: string): string => (digitsOf(currency) ? `12.${'5'.padEnd(digitsOf(currency), '0')}` : '1000');

/** An amount as the shopper reads it, in the Intl locale given ("€19.99", "19,99 €"); "19.99 XYZ" for a code Intl does not know. */
export function formatAmount(minor: number, currency: string, locale?: string): string {
  const digits = digitsOf(currency);
  try {
    return new Intl.NumberFormat(locale, { style: 'currency', currency }).format(minor / 10 ** digits);
  } catch {
    return `${(minor / 10 ** digits).toFixed(digits)} ${currency}`;
  }
}
