// Card checks the widget runs before sending anything (the server checks again).

export function luhnValid(digits: string): boolean {
  if (!/^[0-9]{12,19}$/.test(digits)) return false;
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

/** "MM/YY", "MM / YY" or "MM/YYYY" -> { month: "MM", year: "YYYY" }. */
export function parseExpiry(value: string): { month: string; year: string } | undefined {
  const m = /^\s*(0[1-9]|1[0-2])\s*\/?\s*([0-9]{2}|20[0-9]{2})\s*$/.exec(value);
  if (!m) return undefined;
  return { month: m[1]!, year: m[2]!.length === 2 ? `20${m[2]}` : m[2]! };
}

/** A card is valid until the end of its expiry month. */
export function expiryValid(e: { month: string; year: string }, now = new Date()): boolean {
  return new Date(Date.UTC(Number(e.year), Number(e.month), 1)).getTime() > now.getTime();
}

/** 3 digits, or 4 for American Express (34, 37). */
export function cvvValid(cvv: string, cardNumber: string): boolean {
  const amex = /^3[47]/.test(cardNumber);
  return amex ? /^[0-9]{4}$/.test(cvv.trim()) : /^[0-9]{3}$/.test(cvv.trim());
}

/** The card brand a number's first digits show, as the shopper knows it; undefined while unknown. */
export function cardBrand(digits: string): string | undefined {
  if (/^4/.test(digits)) return 'Visa';
  if (/^(5[1-5]|2(2[2-9]|[3-6]|7[01]|720))/.test(digits)) return 'Mastercard';
  if (/^3[47]/.test(digits)) return 'American Express';
  if (/^(6011|65|64[4-9])/.test(digits)) return 'Discover';
  if (/^35(2[89]|[3-8])/.test(digits)) return 'JCB';
  return undefined;
}

/** Digits grouped as printed on the card: 4-6-5 for American Express, groups of 4 otherwise. */
export function groupCardNumber(digits: string): string {
  const groups = /^3[47]/.test(digits) ? [4, 6, 5] : [4, 4, 4, 4, 3];
  const out: string[] = [];
  let i = 0;
  for (const g of groups) {
    if (i >= digits.length) break;
    out.push(digits.slice(i, i + g));
    i += g;
  }
  return out.join(' ');
}
