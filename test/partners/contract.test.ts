// The connector contract: what every partner connector must do, run against each one —
// the card simulator (in process) and the Stripe connector over real HTTP against
// stripe-stateful-mock (a stateful Stripe API sandbox started here on a local port).
// A connector declares what it cannot do (Stripe's Charges API has no 3-D Secure and
// captures a charge once); everything else is the same assertion for all.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { AuthorizeRequest, PartnerConnector, PartnerResult, SyncRequest } from '../../src/partners/port.ts';
import { BnplSimulator, CardAcquirerSimulator, GiftCardSimulator } from '../../src/partners/simulators/index.ts';
import { StripeConnector } from '../../src/partners/stripe/stripe-connector.ts';
import { cardDetails, fingerprintKey } from '../../src/payments/cards.ts';
import { freePort } from '../helpers/processes.ts';
import { createTestDb, type TestDb } from '../helpers/db.ts';
import { startStripeMock, type StripeMock } from '../helpers/stripe-mock.ts';

const FP = fingerprintKey(Buffer.alloc(32, 7));
const ENTITY = randomUUID();

type Want = 'approved' | 'refused' | 'challenge';

interface Subject {
  connector: PartnerConnector;
  /** An authorization request the partner approves, refuses, or challenges (3-D Secure); undefined: it has no such case. */
  request: (want: Want, amount?: number) => AuthorizeRequest | undefined;
  /** Stripe captures a charge once: a partial capture releases the rest. */
  singleCapture: boolean;
  /** An authorization whose answer does not come (a partner unreachable, or a lost answer). */
  lostAnswer: () => Promise<PartnerResult>;
  /**
   * The partner's notification (inbound webhook) that the authorization sent with this key
   * and answered with this reference has its outcome: the body and headers the partner posts.
   */
  notify: (key: string, reference: string) => Promise<{ body: string; headers: Record<string, string> }>;
}

function card(number: string) {
  return { type: 'CARD' as const, number, expiry_month: '12', expiry_year: String(new Date().getFullYear() + 3), cvv: '123' };
}

function authorizeRequest(number: string, amount = 5000, key: string = randomUUID()): AuthorizeRequest {
  const instrument = card(number);
  return {
    key, entityId: ENTITY, method: 'CARD', amount, currency: 'EUR', instrument, card: cardDetails(FP, ENTITY, instrument),
    return_url: 'http://payd.test/checkout/3ds-return/x',
  };
}

const cardRequests = (cards: Partial<Record<Want, string>>) => (want: Want, amount?: number) =>
  (cards[want] ? authorizeRequest(cards[want], amount) : undefined);

let giftCounter = 0;
/** A gift card never seen (500.00 on it), or one the simulator refuses (PIN 0000), or whose answer is lost (PIN 0408). */
function giftRequest(pin: string, amount = 5000): AuthorizeRequest {
  giftCounter += 1;
  // (Ends in 42: a number ending in 0001 or 0000 has a balance of 10.00 or 0.)
  const number = `6036${String(process.pid % 10000).padStart(4, '0')}${String(Date.now() % 1e6).padStart(6, '0')}${String(giftCounter).padStart(2, '0')}42`;
  return { key: randomUUID(), entityId: ENTITY, method: 'GIFT_CARD', amount, currency: 'EUR', instrument: { type: 'GIFT_CARD', number, pin }, return_url: 'http://payd.test/x' };
}

function bnplRequest(email: string, amount = 5000): AuthorizeRequest {
  return { key: randomUUID(), entityId: ENTITY, method: 'INSTALLMENTS_3X', amount, currency: 'EUR', instrument: { type: 'NONE' }, customer: { email }, return_url: 'http://payd.test/x' };
}

const final = (r: PartnerResult) => r.outcome !== 'PENDING';

function contract(name: string, setup: () => Promise<Subject>) {
  describe(`connector contract: ${name}`, () => {
    let s: Subject;
    before(async () => {
      s = await setup();
    });

    it('authorizes an approved request: SUCCESS, a reference, and for a card the facts the partner knows (funding type)', async () => {
      const req = s.request('approved')!;
      const r = await s.connector.authorize(req);
      assert.equal(r.outcome, 'SUCCESS', JSON.stringify(r));
      assert.ok(r.partner_reference);
      if (req.instrument.type !== 'CARD') {
        assert.equal(r.card, undefined, 'no card facts without a card');
        return;
      }
      assert.ok(r.card, 'the card is echoed');
      assert.equal(r.card!.last_four_digits, req.instrument.number.slice(-4));
      assert.match(r.card!.type, /^(CREDIT|DEBIT|PREPAID)$/, 'payd cannot know the funding type; the partner says it');
      assert.equal(r.card!.selected_network, 'VISA');
    });

    it('refuses a declined card with a status code, never SUCCESS', async () => {
      const r = await s.connector.authorize(s.request('refused')!);
      assert.equal(r.outcome, 'REFUSED', JSON.stringify(r));
      assert.ok(r.status_code && r.status_code !== 'SUCCEEDED');
    });

    it('is idempotent: a retry with the same partner key gets the first answer, nothing twice', async () => {
      const req = s.request('approved')!;
      const a = await s.connector.authorize(req);
      const b = await s.connector.authorize(req);
      assert.equal(b.partner_reference, a.partner_reference);
      const cap = { key: randomUUID(), entityId: ENTITY, authorization_reference: a.partner_reference!, amount: 5000, currency: 'EUR' };
      const c1 = await s.connector.capture(cap);
      const c2 = await s.connector.capture(cap);
      assert.equal(c1.outcome, 'SUCCESS');
      assert.equal(c2.outcome, 'SUCCESS', 'the retried capture is the same capture, not a second one refused');
      const ref = { key: randomUUID(), entityId: ENTITY, authorization_reference: a.partner_reference!, amount: 2000, currency: 'EUR' };
      const r1 = await s.connector.refund(ref);
      const r2 = await s.connector.refund(ref);
      assert.equal(r1.outcome, 'SUCCESS');
      assert.equal(r2.partner_reference, r1.partner_reference);
      // Only 2000 was refunded: 3000 are left, and 3001 is more than that.
      const over = await s.connector.refund({ key: randomUUID(), entityId: ENTITY, authorization_reference: a.partner_reference!, amount: 3001, currency: 'EUR' });
      assert.ok(final(over) && over.outcome !== 'SUCCESS', JSON.stringify(over));
    });

    it('captures in full; captures partially, and never more than was authorized', async () => {
      const full = await s.connector.authorize(s.request('approved', 4000)!);
      const c = await s.connector.capture({ key: randomUUID(), entityId: ENTITY, authorization_reference: full.partner_reference!, amount: 4000, currency: 'EUR' });
      assert.equal(c.outcome, 'SUCCESS');
      const part = await s.connector.authorize(s.request('approved', 4000)!);
      const p1 = await s.connector.capture({ key: randomUUID(), entityId: ENTITY, authorization_reference: part.partner_reference!, amount: 1500, currency: 'EUR' });
      assert.equal(p1.outcome, 'SUCCESS');
      const over = await s.connector.capture({ key: randomUUID(), entityId: ENTITY, authorization_reference: part.partner_reference!, amount: 2501, currency: 'EUR' });
      assert.ok(final(over) && over.outcome !== 'SUCCESS', JSON.stringify(over));
      const rest = await s.connector.capture({ key: randomUUID(), entityId: ENTITY, authorization_reference: part.partner_reference!, amount: 2500, currency: 'EUR' });
      assert.equal(rest.outcome, s.singleCapture ? 'REFUSED' : 'SUCCESS', JSON.stringify(rest));
    });

    it('concurrent captures of one authorization never take more than it holds; concurrent retries of one key are one capture', async () => {
      const a = await s.connector.authorize(s.request('approved', 5000)!);
      const capture = (key: string) => s.connector.capture({ key, entityId: ENTITY, authorization_reference: a.partner_reference!, amount: 2000, currency: 'EUR' });
      const answers = await Promise.all(Array.from({ length: 6 }, () => capture(randomUUID())));
      const won = answers.filter((r) => r.outcome === 'SUCCESS').length;
      assert.ok(answers.every(final), JSON.stringify(answers));
      assert.equal(won, s.singleCapture ? 1 : 2, JSON.stringify(answers));
      const b = await s.connector.authorize(s.request('approved', 5000)!);
      const same = { key: randomUUID(), entityId: ENTITY, authorization_reference: b.partner_reference!, amount: 2000, currency: 'EUR' };
      const retries = await Promise.all(Array.from({ length: 4 }, () => s.connector.capture(same)));
      assert.ok(retries.every((r) => r.outcome === 'SUCCESS' && r.partner_reference === retries[0]!.partner_reference), JSON.stringify(retries));
      const rest = await s.connector.capture({ key: randomUUID(), entityId: ENTITY, authorization_reference: b.partner_reference!, amount: 3000, currency: 'EUR' });
      assert.equal(rest.outcome, s.singleCapture ? 'REFUSED' : 'SUCCESS', `only one 2000 was captured: ${JSON.stringify(rest)}`);
    });

    it('voids an uncaptured authorization; a capture after the void is refused', async () => {
      const a = await s.connector.authorize(s.request('approved', 3000)!);
      const v = await s.connector.void({ key: randomUUID(), entityId: ENTITY, authorization_reference: a.partner_reference!, amount: 3000, currency: 'EUR' });
      assert.equal(v.outcome, 'SUCCESS', JSON.stringify(v));
      const c = await s.connector.capture({ key: randomUUID(), entityId: ENTITY, authorization_reference: a.partner_reference!, amount: 3000, currency: 'EUR' });
      assert.ok(final(c) && c.outcome !== 'SUCCESS', JSON.stringify(c));
    });

    it('sync after a lost answer finds the call by its key; a key never sent is NOT_FOUND', async () => {
      const req = s.request('approved', 2500)!;
      const sentAt = new Date();
      const first = await s.connector.authorize(req); // the answer payd "lost"
      const sync = (kind: SyncRequest['kind'], key: string, amount: number, ref?: string) =>
        s.connector.sync({ key, entityId: ENTITY, kind, context: { amount, currency: 'EUR', sent_at: sentAt, ...(ref ? { authorization_reference: ref } : {}) } });
      const found = await sync('AUTHORIZATION', req.key, 2500);
      assert.notEqual(found, 'NOT_FOUND');
      assert.equal((found as PartnerResult).outcome, 'SUCCESS');
      assert.equal((found as PartnerResult).partner_reference, first.partner_reference);
      assert.equal(await sync('AUTHORIZATION', randomUUID(), 2500), 'NOT_FOUND');

      const capKey = randomUUID();
      await s.connector.capture({ key: capKey, entityId: ENTITY, authorization_reference: first.partner_reference!, amount: 2500, currency: 'EUR' });
      const cap = await sync('CAPTURE', capKey, 2500, first.partner_reference);
      assert.equal((cap as PartnerResult).outcome, 'SUCCESS');
      const refundKey = randomUUID();
      assert.equal(await sync('REFUND', refundKey, 1000, first.partner_reference), 'NOT_FOUND');
      const refund = await s.connector.refund({ key: refundKey, entityId: ENTITY, authorization_reference: first.partner_reference!, amount: 1000, currency: 'EUR' });
      const synced = await sync('REFUND', refundKey, 1000, first.partner_reference);
      assert.equal((synced as PartnerResult).outcome, 'SUCCESS');
      assert.equal((synced as PartnerResult).partner_reference, refund.partner_reference);
    });

    it('reads its signed notification of an authorization as that call\'s answer; a forged or altered one is UNVERIFIED', async () => {
      const req = s.request('approved', 1800)!;
      const answered = await s.connector.authorize(req);
      assert.equal(answered.outcome, 'SUCCESS');
      const n = await s.notify(req.key, answered.partner_reference!);
      const read = await s.connector.notification!(n.body, n.headers);
      assert.notEqual(read, 'UNVERIFIED');
      const notes = read as Exclude<typeof read, 'UNVERIFIED'>;
      assert.equal(notes.length, 1);
      assert.equal(notes[0]!.key, req.key);
      assert.equal(notes[0]!.kind ?? 'AUTHORIZATION', 'AUTHORIZATION');
      assert.equal(notes[0]!.result.outcome, 'SUCCESS');
      assert.equal(notes[0]!.result.partner_reference, answered.partner_reference);
      // Repeated (at least once delivery): read the same again; payd applies it once (payments/partner-webhooks.routes.ts).
      assert.deepEqual(await s.connector.notification!(n.body, n.headers), read);
      assert.equal(await s.connector.notification!(n.body.replace('1800', '1900'), n.headers), 'UNVERIFIED', 'an altered body');
      const forged = Object.fromEntries(Object.entries(n.headers).map(([k, v]) => [k, v.replace(/v1=[0-9a-f]+/, `v1=${'0'.repeat(64)}`)]));
      assert.equal(await s.connector.notification!(n.body, forged), 'UNVERIFIED', 'a forged signature');
      assert.equal(await s.connector.notification!(n.body, {}), 'UNVERIFIED', 'no signature');
    });

    it('an answer that does not come is thrown (outcome unknown), never turned into REFUSED', async () => {
      await assert.rejects(() => s.lostAnswer());
    });

    it('3-D Secure: a challenge card answers PENDING with a redirection (connectors that support it)', async (t) => {
      const challenge = s.request('challenge');
      if (!challenge) {
        // Declared by the connector (Stripe's Charges API has no 3-D Secure): nothing to run.
        t.diagnostic(`${name} declares no 3-D Secure`);
        return;
      }
      const r = await s.connector.authorize(challenge);
      assert.equal(r.outcome, 'PENDING');
      assert.ok(r.redirection?.url);
    });
  });
}

let db: TestDb;
let mock: StripeMock;
before(async () => {
  db = await createTestDb();
  mock = await startStripeMock();
});
after(async () => {
  await mock?.stop();
  await db?.close();
});

contract('card-sim', async () => {
  // Recorded calls (not inline answers): the simulator behaves as a partner across a network.
  const connector = new CardAcquirerSimulator(db.db, { baseUrl: 'http://payd.test', inline: false, timeoutResolveMs: 50, notificationSecret: 'sim-contract-secret' });
  return {
    notify: async (key) => {
      const body = JSON.stringify({ key, amount: 1800 });
      return { body, headers: { 'sim-signature': connector.signNotification(body) } };
    },
    connector,
    request: cardRequests({ approved: '4242424242424242', refused: '4000000000000002', challenge: '4000000000003220' }),
    singleCapture: false,
    lostAnswer: () => connector.authorize(authorizeRequest('4000000000000408')),
  };
});

const simNotify = (connector: { signNotification(body: string): string }) => async (key: string) => {
  const body = JSON.stringify({ key, amount: 1800 });
  return { body, headers: { 'sim-signature': connector.signNotification(body) } };
};
const SIM = { baseUrl: 'http://payd.test', inline: false, timeoutResolveMs: 50, notificationSecret: 'sim-contract-secret' };

contract('gift-sim', async () => {
  const connector = new GiftCardSimulator(db.db, SIM);
  return {
    connector,
    request: (want, amount) => (want === 'challenge' ? undefined : giftRequest(want === 'approved' ? '1234' : '0000', amount)),
    singleCapture: false,
    lostAnswer: () => connector.authorize(giftRequest('0408')),
    notify: simNotify(connector),
  };
});

/**
 * bnpl-sim takes 50.00 to 3000.00 only (its own rule, checked in test/partners and the
 * checkout tests); the contract's amounts are smaller, so its bounds are widened here.
 */
class ContractBnpl extends BnplSimulator {
  override readonly limits = { currencies: ['EUR'], min_amount: 1, max_amount: 300_000 };
}

contract('bnpl-sim', async () => {
  const connector = new ContractBnpl(db.db, SIM);
  return {
    connector,
    request: (want, amount) => (want === 'challenge' ? undefined : bnplRequest(want === 'approved' ? 'shopper@example.com' : 'refuse@example.com', amount)),
    singleCapture: false,
    lostAnswer: () => connector.authorize(bnplRequest('timeout@example.com')),
    notify: simNotify(connector),
  };
});

contract('stripe (stripe-stateful-mock over HTTP)', async () => {
  const deadPort = await freePort(); // nothing listens there
  const webhookSecret = 'whsec_payd_contract';
  const { default: Stripe } = await import('stripe');
  return {
    connector: new StripeConnector({ secretKey: 'sk_test_payd_contract', apiBase: mock.url, webhookSecret }),
    notify: async (_key, reference) => {
      // The charge as Stripe holds it, in the charge.succeeded event Stripe would post.
      const charge = await (await fetch(`${mock.url}/v1/charges/${reference}`, { headers: { authorization: 'Bearer sk_test_payd_contract' } })).json();
      const body = JSON.stringify({ id: `evt_${reference}`, object: 'event', type: 'charge.succeeded', data: { object: charge } });
      return { body, headers: { 'stripe-signature': new Stripe('sk_test_x').webhooks.generateTestHeaderString({ payload: body, secret: webhookSecret }) } };
    },
    request: cardRequests({ approved: '4242424242424242', refused: '4000000000000002' }),
    singleCapture: true,
    lostAnswer: () => new StripeConnector({ secretKey: 'sk_test_payd_contract', apiBase: `http://127.0.0.1:${deadPort}`, timeoutMs: 2000 })
      .authorize(authorizeRequest('4242424242424242')),
  };
});

// Simulator fidelity, beyond the contract: a call whose answer timed out was processed all
// the same (the partner settles it later), so it counts against the authorization at once.
describe('card-sim: a capture whose answer timed out counts against its authorization', () => {
  it('a void of the whole amount after it is refused; once settled, the capture stands', async () => {
    const clock = { at: Date.now() };
    const sim = new CardAcquirerSimulator(db.db, { baseUrl: 'http://payd.test', inline: false, timeoutResolveMs: 1000, clock: () => clock.at });
    // Captures by this card time out (the partner answers later, SUCCEEDED).
    const a = await sim.authorize(authorizeRequest('4000000000000416', 1000));
    assert.equal(a.outcome, 'SUCCESS', JSON.stringify(a));
    const capture = { key: randomUUID(), entityId: ENTITY, authorization_reference: a.partner_reference!, amount: 1000, currency: 'EUR' };
    await assert.rejects(sim.capture(capture), /did not answer/);
    const v = await sim.void({ key: randomUUID(), entityId: ENTITY, authorization_reference: a.partner_reference!, amount: 1000, currency: 'EUR' });
    assert.equal(v.outcome, 'REFUSED', `the capture in flight took the amount: ${JSON.stringify(v)}`);
    clock.at += 1001;
    const settled = await sim.sync({ key: capture.key, entityId: ENTITY, kind: 'CAPTURE' });
    assert.ok(settled !== 'NOT_FOUND' && settled.outcome === 'SUCCESS', JSON.stringify(settled));
  });
});

