// The addresses a shopper's browser comes back to payd at (the checkout's outcome page,
// /checkout/return/{session id}, and the return from a 3-D Secure challenge,
// /checkout/3ds-return/{payment id}) carry a MAC of the id: the page shows a receipt
// (merchant, amount, items, last four digits) and leads to a freshly signed redirection
// token, so knowing a session or payment id (in the merchant's logs, webhooks, the API)
// must not be enough to open it. The key is derived from the master key.
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

export type ReturnPurpose = 'return' | '3ds';

export class ReturnLinks {
  private readonly key: Buffer;
  constructor(masterKey: Buffer, private readonly baseUrl: string) {
    this.key = Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), 'payd checkout return v1', 32));
  }

  /** The MAC of a return address (128 bits, base64url). */
  sign(purpose: ReturnPurpose, id: string): string {
    return createHmac('sha256', this.key).update(`${purpose}:${id}`).digest().subarray(0, 16).toString('base64url');
  }

  verify(purpose: ReturnPurpose, id: string, t: unknown): boolean {
    if (typeof t !== 'string' || t.length !== 22) return false;
    const given = Buffer.from(t);
    const expected = Buffer.from(this.sign(purpose, id));
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  /** The checkout's outcome page of a client session. */
  returnUrl(sessionId: string): string {
    return `${this.baseUrl}/checkout/return/${sessionId}?t=${this.sign('return', sessionId)}`;
  }

  /** Where the 3-D Secure challenge of a payment sends the shopper back. */
  threeDsReturnUrl(paymentId: string): string {
    return `${this.baseUrl}/checkout/3ds-return/${paymentId}?t=${this.sign('3ds', paymentId)}`;
  }
}
