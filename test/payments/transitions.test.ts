// The table of states and operations (src/payments/transitions.ts) walked against the
// API (issue 44 item 1): for each state a payment can be in, the operations the table
// allows succeed, the others are refused with the problem the table names, and the
// Payment's links keep the spec's four. The expected sets are written out here
// (the spec: authorized → capture/void, captured → refund), not read from the table.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { OPERATION_NAMES, OPERATIONS, REFUSALS, allowedIn, allowedOperations, operationDescription, type OperationName } from '../../src/payments/transitions.ts';
import { createTestApp, type Merchant, type TestApp } from '../helpers/app.ts';

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
    assert.match(operationDescription('refund'), /AUTHORIZED, up to what is captured, not refunded \(amounts.available_to_refund\)/);
    assert.match(operationDescription('capture'), /PENDING, REFUSED, ERROR: a 400 problem of type urn:eu.service:payment-not-authorized/);
  });
});
