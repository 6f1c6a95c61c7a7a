// Card facts payd keeps instead of the number: bin, last four, expiry, holder, network
// and a keyed fingerprint (HMAC-SHA256 per merchant entity, so fingerprints cannot be
// correlated across merchants). The number and CVV never leave the request. The funding
// type and the issuer's country come from the partner's answer (partners/bin.ts).
import { createHmac, hkdfSync } from 'node:crypto';
import { UNKNOWN_FUNDING, cardNetwork } from '../partners/bin.ts';
import type { CardDetails, CardInstrument } from '../partners/port.ts';

export function luhnValid(number: string): boolean {
  if (!/^\d{12,19}$/.test(number)) return false;
  let sum = 0;
  for (let i = 0; i < number.length; i++) {
    let d = number.charCodeAt(number.length - 1 - i) - 48;
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

export function fingerprintKey(masterKey: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), 'payd card fingerprint v1', 32));
}

export function cardFingerprint(key: Buffer, entityId: string, number: string): string {
  return createHmac('sha256', key).update(`${entityId}:${number}`).digest('base64url').slice(0, 32);
}

export function cardDetails(key: Buffer, entityId: string, card: CardInstrument): CardDetails {
  const bin = card.number.slice(0, 6);
  return {
    bin,
    type: UNKNOWN_FUNDING,
    last_four_digits: card.number.slice(-4),
    ...(card.holder_name ? { holder_name: card.holder_name } : {}),
    expiry_month: card.expiry_month,
    expiry_year: card.expiry_year,
    fingerprint: cardFingerprint(key, entityId, card.number),
    selected_network: cardNetwork(card.number),
  };
}
