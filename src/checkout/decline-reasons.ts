// What a shopper is told about a declined attempt (docs/checkout.md "A declined card"):
// partners' decline codes, as payd records them (status_code of the authorization), mapped
// to the few reasons a shopper can act on. Expired card, wrong security code and
// insufficient funds are named; every other decline (do not honor, suspected fraud, lost
// or stolen card, velocity limits...) stays the generic "declined", so that the answers
// do not help someone testing stolen card numbers.
export const DECLINE_REASONS = ['expired_card', 'incorrect_cvc', 'insufficient_funds'] as const;
export type DeclineReason = (typeof DECLINE_REASONS)[number];

/** Partner codes (the simulators', Stripe's decline_code/code upper-cased) and the reason each is shown as. */
const BY_CODE: Readonly<Record<string, DeclineReason>> = {
  EXPIRED_CARD: 'expired_card',
  INCORRECT_CVV: 'incorrect_cvc',
  INCORRECT_CVC: 'incorrect_cvc',
  INVALID_CVC: 'incorrect_cvc',
  INSUFFICIENT_FUNDS: 'insufficient_funds',
};

/** The reason of a refused attempt, from the status codes of its authorizations; undefined when none may be named. */
export function declineReason(statusCodes: ReadonlyArray<string | undefined>): DeclineReason | undefined {
  for (const code of statusCodes) {
    const reason = code ? BY_CODE[code.toUpperCase()] : undefined;
    if (reason) return reason;
  }
  return undefined;
}
