// The table of states and operations (src/payments/transitions.ts) walked against the
// API (issue 44 item 1): for each state a payment can be in, the operations the table
// allows succeed, the others are refused with the problem the table names, and the
// Payment's links keep the spec's four. The expected sets are written out here
// (the spec: authorized → capture/void, captured → refund), not read from the table.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { OPERATION_NAMES, OPERATIONS, REFUSALS, allowedIn, allowedOperations, availableFor, operationDescription, type OperationName } from '../../src/payments/transitions.ts';
import type { AuthorizationStatus } from '../../src/payments/common.schemas.ts';
import { createTestApp, type Merchant, type TestApp } from '../helpers/app.ts';
import { TestClock } from '../helpers/clock.ts';
import { ACTIONS } from '../../src/dashboard/payment-actions.ts';

const card = (amount: number, number: string) => ({
  partner: 'card-sim', method: 'CARD', amount, instrument: { type: 'CARD', number, expiry_month: '12', expiry_year: '2031', cvv: '123' },
});

describe('transitions: the table against the API', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant('Transitions');
  });
  after(() => t?.close());

  const post = (url: string, payload: object) => t.app.inject({ method: 'POST', url, headers: m.auth, payload });
  const create = async (number: string) => {
    const r = await post('/v2/payments', { amount: 5000, currency: 'EUR', capture_mode: 'MANUAL', split: [card(5000, number)] });
    assert.equal(r.statusCode, 200, r.body);
    return r.json();
  };
  const op = async (id: string, name: OperationName, amount?: number) => post(`/v2/payments/${id}/${OPERATIONS[name].path}`, amount === undefined ? {} : { amount });
  const ok = async (id: string, name: OperationName, amount?: number) => {
    const r = await op(id, name, amount);
    assert.equal(r.statusCode, 200, r.body);
    return r.json();
  };

  // Each state: how to reach it, its authorization status, and the operations it allows.
  const states: Array<{ name: string; status: string; make: () => Promise<{ id: string }>; allowed: OperationName[] }> = [
    { name: 'PENDING (3-D Secure challenge)', status: 'PENDING', make: () => create('4000000000003220'), allowed: [] },
    { name: 'REFUSED', status: 'REFUSED', make: () => create('4000000000000002'), allowed: [] },
    { name: 'ERROR', status: 'ERROR', make: () => create('4000000000000119'), allowed: [] },
    { name: 'AUTHORIZED, nothing captured', status: 'AUTHORIZED', make: () => create('4242424242424242'), allowed: ['capture', 'void'] },
    { name: 'AUTHORIZED, partly captured', status: 'AUTHORIZED', allowed: ['capture', 'refund', 'void'],
      make: async () => { const p = await create('4242424242424242'); return ok(p.id, 'capture', 2000); } },
    { name: 'AUTHORIZED, fully captured', status: 'AUTHORIZED', allowed: ['refund'],
      make: async () => { const p = await create('4242424242424242'); return ok(p.id, 'capture', 5000); } },
    { name: 'AUTHORIZED, captured and the rest voided', status: 'AUTHORIZED', allowed: ['refund'],
      make: async () => { const p = await create('4242424242424242'); await ok(p.id, 'capture', 2000); return ok(p.id, 'void'); } },
    { name: 'AUTHORIZED, fully voided', status: 'AUTHORIZED', allowed: [],
      make: async () => { const p = await create('4242424242424242'); return ok(p.id, 'void'); } },
    { name: 'AUTHORIZED, fully captured and refunded', status: 'AUTHORIZED', allowed: [],
      make: async () => { const p = await create('4242424242424242'); await ok(p.id, 'capture', 5000); return ok(p.id, 'refund'); } },
    { name: 'AUTHORIZED, capture declined (0341)', status: 'AUTHORIZED', allowed: ['capture', 'void'],
      make: async () => { const p = await create('4000000000000341'); return ok(p.id, 'capture', 1000); } },
    { name: 'AUTHORIZED, refund declined (5126)', status: 'AUTHORIZED', allowed: ['refund'],
      make: async () => { const p = await create('4000000000005126'); await ok(p.id, 'capture', 5000); return ok(p.id, 'refund', 1000); } },
  ];

  for (const s of states) {
    it(`${s.name}: ${s.allowed.join(', ') || 'nothing'} allowed, the rest refused with the table's problem`, async () => {
      const p = await s.make() as { id: string; authorization: { status: 'AUTHORIZED' }; amounts: Record<string, number>; links: Record<string, { href: string; method: string }> };
      assert.equal(p.authorization.status, s.status);
      assert.deepEqual(allowedOperations(p.authorization.status, p.amounts as never, { capture: 0, refund: 0, void: 0 }).map((x) => x.op).sort(), [...s.allowed].sort(), 'the table');
      // The links keep the spec's shape (all four, always); what is allowed now is the amounts'.
      assert.deepEqual(Object.keys(p.links).filter((k) => k !== 'self').sort(), ['capture', 'refund', 'void']);
      for (const name of s.allowed) assert.deepEqual(p.links[name], { href: `http://payd.test/v2/payments/${p.id}/${OPERATIONS[name].path}`, method: 'POST' });
      for (const name of OPERATION_NAMES) {
        const fresh = await s.make(); // (a state per operation: a success moves the payment on)
        const r = await op(fresh.id, name, 1);
        if (s.allowed.includes(name)) {
          assert.equal(r.statusCode, 200, `${name}: ${r.body}`);
          const ops = r.json()[OPERATIONS[name].path] as Array<{ id: string; status: string }>;
          assert.equal(ops.find((o) => o.id === r.headers['x-created-operation-id'])?.status, name === 'capture' && s.name.includes('0341') ? 'FAILURE'
            : name === 'refund' && s.name.includes('5126') ? 'FAILURE' : 'SUCCESS', `${name}: ${r.body}`);
        } else {
          assert.equal(r.statusCode, 400, `${name}: ${r.body}`);
          const refusal = allowedIn(s.status as 'AUTHORIZED', name) ? REFUSALS.balance : REFUSALS.state;
          assert.equal(r.json().type, `urn:eu.service:${refusal.type}`, `${name}: ${r.body}`);
          assert.equal(r.json().title, refusal.title);
        }
      }
    });
  }

  it('the OpenAPI description of each operation says what the table says', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    for (const name of OPERATION_NAMES) {
      const d = doc.paths[`/v2/payments/{id}/${OPERATIONS[name].path}`].post.description as string;
      assert.ok(d.startsWith(operationDescription(name)), d);
    }
    assert.match(operationDescription('refund'), /AUTHORIZED, up to what is captured, not refunded \(total_captured − total_refunded\) less what refunds in progress reserve: amounts.available_to_refund, which is 0 in any other state/);
    assert.match(operationDescription('capture'), /PENDING, REFUSED, ERROR: a 400 problem of type urn:eu.service:payment-not-authorized/);
  });
});

// The Payment's amounts.available_to_* against the table (issue 44 item 3; the audit's
// finding): each is what the table's availableFor gives the operation in the payment's
// state, less what operations in flight reserve, so 0 exactly when the table refuses the
// operation; and an operation of that amount is accepted (200), one of a unit more is
// refused (400). States where the two could part: a PENDING split whose gift card is
// already authorized, a capture in flight, REFUSED and ERROR payments (a split's
// authorized part reversed), fully captured, voided, refunded. The dashboard's action
// forms are compared with the table on the same states.
describe('transitions: the Payment\'s available_to_* are the table\'s', () => {
  let t: TestApp;
  let m: Merchant;
  const clock = new TestClock();
  before(async () => {
    clock.freeze(); // a capture that timed out stays in flight (the simulator reveals it only once the clock moves on)
    t = await createTestApp({}, { clock: clock.now });
    m = await t.createMerchant('Available');
  });
  after(() => t?.close());

  type View = {
    id: string; authorization: { status: AuthorizationStatus }; amounts: Record<string, number>;
    captures: Array<{ status: string; amount: number }>; refunds: Array<{ status: string; amount: number }>; voids: Array<{ status: string; amount: number }>;
  };
  const post = (url: string, payload: object) => t.app.inject({ method: 'POST', url, headers: m.auth, payload });
  let gifts = 0; // (a fresh card each time, holding the simulator's 50,000: numbers ending 0000 or 0001 hold less)
  const gift = (amount: number) => ({
    partner: 'gift-sim', method: 'GIFT_CARD', amount,
    instrument: { type: 'GIFT_CARD', number: `6036${String(process.pid).padStart(6, '0').slice(-6)}${String(++gifts).padStart(5, '0')}7` },
  });
  const create = async (split: object[], status: AuthorizationStatus): Promise<View> => {
    const amount = (split as Array<{ amount: number }>).reduce((s, x) => s + x.amount, 0);
    const r = await post('/v2/payments', { amount, currency: 'EUR', capture_mode: 'MANUAL', split });
    assert.equal(r.statusCode, 200, r.body);
    assert.equal(r.json().authorization.status, status, r.body);
    return r.json();
  };
  const op = (id: string, name: OperationName, amount: number) => post(`/v2/payments/${id}/${OPERATIONS[name].path}`, { amount });
  const ok = async (id: string, name: OperationName, amount: number): Promise<View> => {
    const r = await op(id, name, amount);
    assert.equal(r.statusCode, 200, r.body);
    return r.json();
  };
  /** What operations in flight (PENDING) reserve, per operation, as the Payment shows them. */
  const reservedOf = (p: View) => {
    const sum = (ops: Array<{ status: string; amount: number }>) => ops.filter((o) => o.status === 'PENDING').reduce((s, o) => s + o.amount, 0);
    return { capture: sum(p.captures), refund: sum(p.refunds), void: sum(p.voids) };
  };
  /** The table's answer for the operation on this payment (the function plan uses), from its totals and what is in flight. */
  const table = (p: View, name: OperationName) => availableFor(name, p.authorization.status, p.amounts as never, reservedOf(p));

  const states: Array<{ name: string; make: () => Promise<View> }> = [
    { name: 'PENDING (3-D Secure challenge)', make: () => create([card(5000, '4000000000003220')], 'PENDING') },
    { name: 'PENDING (authorization timed out)', make: () => create([card(5000, '4000000000000408')], 'PENDING') },
    { name: 'PENDING split, its gift card authorized, its card in a challenge', make: () => create([gift(2000), card(3000, '4000000000003220')], 'PENDING') },
    { name: 'REFUSED', make: () => create([card(5000, '4000000000000002')], 'REFUSED') },
    { name: 'ERROR', make: () => create([card(5000, '4000000000000119')], 'ERROR') },
    { name: 'REFUSED split, its gift card authorized then given back', make: () => create([gift(2000), card(3000, '4000000000000002')], 'REFUSED') },
    { name: 'ERROR split, its gift card authorized then given back', make: () => create([gift(2000), card(3000, '4000000000000119')], 'ERROR') },
    { name: 'AUTHORIZED, nothing captured', make: () => create([card(5000, '4242424242424242')], 'AUTHORIZED') },
    { name: 'AUTHORIZED split, nothing captured', make: () => create([gift(2000), card(3000, '4242424242424242')], 'AUTHORIZED') },
    { name: 'AUTHORIZED, partly captured', make: async () => ok((await create([card(5000, '4242424242424242')], 'AUTHORIZED')).id, 'capture', 2000) },
    { name: 'AUTHORIZED, a capture in flight (timed out at the acquirer)', make: async () => {
      const p = await ok((await create([card(5000, '4000000000000416')], 'AUTHORIZED')).id, 'capture', 3000);
      assert.deepEqual(p.captures.map((c) => c.status), ['PENDING']);
      return p;
    } },
    { name: 'AUTHORIZED, fully captured', make: async () => ok((await create([card(5000, '4242424242424242')], 'AUTHORIZED')).id, 'capture', 5000) },
    { name: 'AUTHORIZED, captured and the rest voided', make: async () => {
      const p = await create([card(5000, '4242424242424242')], 'AUTHORIZED');
      await ok(p.id, 'capture', 2000);
      return ok(p.id, 'void', 3000);
    } },
    { name: 'AUTHORIZED, fully voided', make: async () => ok((await create([card(5000, '4242424242424242')], 'AUTHORIZED')).id, 'void', 5000) },
    { name: 'AUTHORIZED, fully captured and refunded', make: async () => {
      const p = await create([card(5000, '4242424242424242')], 'AUTHORIZED');
      await ok(p.id, 'capture', 5000);
      return ok(p.id, 'refund', 5000);
    } },
  ];

  it('the dashboard has one action per operation of the table', () => {
    assert.deepEqual(Object.keys(ACTIONS).sort(), [...OPERATION_NAMES].sort());
  });

  for (const s of states) {
    it(`${s.name}: each available_to_* is the table's, and what an operation is accepted for; the dashboard offers the same`, async () => {
      const shown = await s.make();
      for (const name of OPERATION_NAMES) {
        const field = `available_to_${name}`;
        assert.equal(shown.amounts[field], table(shown, name), `${field} is the table's (${shown.authorization.status}, in flight ${JSON.stringify(reservedOf(shown))}): ${JSON.stringify(shown.amounts)}`);
      }
      // The dashboard's actions (dashboard/payment-actions.ts) on the payment as it reads
      // it (the stored view): each offers what the table gives, and only when that is more than 0.
      const stored = await t.app.services.payments.getStored(m.entityId, shown.id) as unknown as View;
      for (const name of OPERATION_NAMES) {
        const action = ACTIONS[name]!;
        assert.equal(action.kind, OPERATIONS[name].kind);
        assert.equal(action.path, OPERATIONS[name].path);
        assert.equal(action.available(stored as never), table(stored, name), `the dashboard's ${name} (${stored.authorization.status}, in flight ${JSON.stringify(reservedOf(stored))})`);
      }
      for (const name of OPERATION_NAMES) {
        const p = await s.make(); // (a payment per operation: an accepted one moves it on)
        const available = p.amounts[`available_to_${name}`]!;
        const over = await op(p.id, name, available + 1);
        assert.equal(over.statusCode, 400, `${name} of ${available + 1} with ${available} available: ${over.body}`);
        const refusal = allowedIn(p.authorization.status, name) ? REFUSALS.balance : REFUSALS.state;
        assert.equal(over.json().type, `urn:eu.service:${refusal.type}`, over.body);
        if (available === 0) continue;
        const exact = await op(p.id, name, available);
        assert.equal(exact.statusCode, 200, `${name} of the ${available} available: ${exact.body}`);
      }
    });
  }
});
