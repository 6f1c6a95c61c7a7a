// What a shopper is told of a decline (src/checkout/decline-reasons.ts; docs/checkout.md
// "A declined card"): the reasons a cardholder can act on are named (expired card, wrong
// security code, insufficient funds); every fraud-type decline (suspected fraud, lost or
// stolen card, do not honor, pick up, restricted, velocity, Radar's risk blocks) stays the
// generic "declined", so that the answers do not help someone testing stolen card numbers.
// The codes are the simulators' and the Stripe connector's, through its own mappings.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type Stripe from 'stripe';
import { DECLINE_REASONS, declineReason } from '../../src/checkout/decline-reasons.ts';
import { authorizationResult, refusal } from '../../src/partners/stripe/stripe-mappings.ts';
import { TEST_CARDS } from '../../src/partners/simulators/card-acquirer.ts';

/** Codes no shopper may be told (the issuer's or the acquirer's suspicion, the card's status). */
const UNNAMED = ['DO_NOT_HONOR', 'FRAUDULENT', 'LOST_CARD', 'STOLEN_CARD', 'PICKUP_CARD', 'RESTRICTED_CARD', 'SECURITY_VIOLATION',
  'CARD_VELOCITY_EXCEEDED', 'MERCHANT_BLACKLIST', 'HIGHEST_RISK_LEVEL', 'ELEVATED_RISK_LEVEL', 'GENERIC_DECLINE', 'CARD_DECLINED',
  'TRANSACTION_NOT_ALLOWED', 'REVOCATION_OF_AUTHORIZATION', 'PROCESSING_ERROR', 'DECLINED', 'CHALLENGE_REQUIRED'];

describe('decline reasons: the actionable ones named, fraud declines never', () => {
  it('names expired card, wrong CVC and insufficient funds, whatever the case of the code', () => {
    for (const [code, reason] of [
      ['EXPIRED_CARD', 'expired_card'], ['expired_card', 'expired_card'],
      ['INCORRECT_CVV', 'incorrect_cvc'], ['INCORRECT_CVC', 'incorrect_cvc'], ['INVALID_CVC', 'incorrect_cvc'], ['incorrect_cvc', 'incorrect_cvc'],
      ['INSUFFICIENT_FUNDS', 'insufficient_funds'], ['insufficient_funds', 'insufficient_funds'],
    ] as const) assert.equal(declineReason([code]), reason, code);
    assert.deepEqual([...DECLINE_REASONS].sort(), ['expired_card', 'incorrect_cvc', 'insufficient_funds'], 'no other reason exists to be shown');
  });

  it('names no fraud, lost, stolen, do-not-honor or other decline, nor an attempt without a code', () => {
    for (const code of UNNAMED) {
      assert.equal(declineReason([code]), undefined, code);
      assert.equal(declineReason([code.toLowerCase()]), undefined, code.toLowerCase());
    }
    assert.equal(declineReason([]), undefined);
    assert.equal(declineReason([undefined]), undefined);
    assert.equal(declineReason(['']), undefined);
  });

  it('maps the card simulator\'s test cards: only its expired, CVC and funds declines are named', () => {
    const refused = TEST_CARDS.filter((c) => c.decision.status === 'REFUSED');
    assert.deepEqual(Object.fromEntries(refused.map((c) => [c.decision.code, declineReason([c.decision.code]) ?? null])), {
      DO_NOT_HONOR: null, INSUFFICIENT_FUNDS: 'insufficient_funds', EXPIRED_CARD: 'expired_card', INCORRECT_CVV: 'incorrect_cvc',
    });
  });

  it('maps the Stripe connector\'s declines (card errors and failed charges): fraud-type decline codes stay unnamed', () => {
    // Card errors, as Stripe answers a charge (code, decline_code): https://docs.stripe.com/declines/codes
    const cardError = (code: string, decline_code?: string) => refusal({ type: 'StripeCardError', rawType: 'card_error', code, ...(decline_code ? { decline_code } : {}), message: 'Your card was declined.' });
    const fromError = (code: string, decline_code?: string) => {
      const r = cardError(code, decline_code);
      assert.equal(r?.outcome, 'REFUSED');
      return declineReason([r!.status_code]) ?? null;
    };
    assert.equal(fromError('expired_card', 'expired_card'), 'expired_card');
    assert.equal(fromError('expired_card'), 'expired_card');
    assert.equal(fromError('incorrect_cvc', 'incorrect_cvc'), 'incorrect_cvc');
    assert.equal(fromError('invalid_cvc'), 'incorrect_cvc');
    assert.equal(fromError('card_declined', 'insufficient_funds'), 'insufficient_funds');
    for (const decline of ['fraudulent', 'lost_card', 'stolen_card', 'do_not_honor', 'generic_decline', 'pickup_card', 'restricted_card',
      'security_violation', 'card_velocity_exceeded', 'merchant_blacklist', 'transaction_not_allowed']) {
      assert.equal(fromError('card_declined', decline), null, decline);
    }
    assert.equal(fromError('card_declined'), null, 'a decline without decline_code');

    // A charge that failed (its outcome's reason, else its failure code).
    const failed = (reason: string | null, failure_code: string | null) => {
      const r = authorizationResult({ id: 'ch_1', status: 'failed', captured: false, failure_code, failure_message: 'Declined', outcome: { reason } } as unknown as Stripe.Charge, undefined);
      assert.equal(r.outcome, 'REFUSED');
      return declineReason([r.status_code]) ?? null;
    };
    assert.equal(failed('expired_card', 'expired_card'), 'expired_card');
    assert.equal(failed(null, 'incorrect_cvc'), 'incorrect_cvc');
    assert.equal(failed('insufficient_funds', 'card_declined'), 'insufficient_funds');
    for (const reason of ['highest_risk_level', 'elevated_risk_level', 'fraudulent', 'lost_card', 'stolen_card', 'do_not_honor', 'generic_decline']) {
      assert.equal(failed(reason, 'card_declined'), null, reason);
    }
    assert.equal(failed(null, 'card_declined'), null);
  });
});
