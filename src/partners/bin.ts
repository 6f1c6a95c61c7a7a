// Card facts payd knows without asking anyone: the network from the card number's
// issuer identification range (public scheme ranges, not a licensed BIN table). The
// funding type (credit, debit, prepaid) and the issuer's country are the partner's to
// say: a connector returns them in its answer's `card` (see port.ts CardDetails), and
// until one does, the type is UNKNOWN and the country absent.

/** Scheme ranges, most specific first: [network, test of the number]. */
const RANGES: [string, (n: string) => boolean][] = [
  ['AMEX', (n) => /^3[47]/.test(n)],
  ['JCB', (n) => inRange(n, 4, 3528, 3589)],
  ['DINERS', (n) => /^3(0[0-5]|[689])/.test(n)],
  ['DISCOVER', (n) => /^(6011|64[4-9]|65)/.test(n) || inRange(n, 6, 622126, 622925)],
  ['UNIONPAY', (n) => /^62/.test(n)],
  ['MAESTRO', (n) => /^(5018|5020|5038|5893|6304|6759|676[1-3])/.test(n)],
  ['MASTERCARD', (n) => /^5[1-5]/.test(n) || inRange(n, 4, 2221, 2720)],
  ['VISA', (n) => /^4/.test(n)],
];

function inRange(number: string, digits: number, low: number, high: number): boolean {
  const head = Number(number.slice(0, digits));
  return number.length >= digits && head >= low && head <= high;
}

/** The card network of a number by its issuer identification range; CB (Cartes Bancaires) when none matches. */
export function cardNetwork(number: string): string {
  for (const [network, test] of RANGES) if (test(number)) return network;
  return 'CB';
}

/** The funding type before a partner has said it. */
export const UNKNOWN_FUNDING = 'UNKNOWN';
