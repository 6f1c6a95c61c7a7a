// The amounts rules (payments/amounts.ts): properties of the pure derivation and
// allocation, then the same invariants through the API over random sequences of
// captures, refunds and voids (fast-check, seeded by node:test's run).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { allocate, deriveAmounts, deriveOverview } from '../../src/payments/amounts.ts';
import { availableFor } from '../../src/payments/transitions.ts';
import { createTestApp, expectProblem, type Merchant, type TestApp } from '../helpers/app.ts';

const card = { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2030' };

describe('amounts.ts properties', () => {
  const totals = fc.record({ a: fc.integer({ min: 0, max: 1e6 }), c: fc.integer({ min: 0, max: 1e6 }), v: fc.integer({ min: 0, max: 1e6 }), r: fc.integer({ min: 0, max: 1e6 }) })
    .map(({ a, c, v, r }) => {
      const captured = Math.min(c, a);
      const voided = Math.min(v, a - captured);
      return { authorize_pending: 0, total_authorized: a, total_captured: captured, total_voided: voided, total_refunded: Math.min(r, captured) };
    });

  const status = fc.constantFrom('PENDING', 'AUTHORIZED', 'REFUSED', 'ERROR') as fc.Arbitrary<'PENDING' | 'AUTHORIZED' | 'REFUSED' | 'ERROR'>;
  const reserved = fc.record({ capture: fc.integer({ min: 0, max: 1e6 }), void: fc.integer({ min: 0, max: 1e6 }), refund: fc.integer({ min: 0, max: 1e6 }) });

  it('never derives a negative or inconsistent amount; available_to_* are the table\'s (0 unless AUTHORIZED, less what is in flight)', () => {
    fc.assert(fc.property(totals, status, reserved, (t, s, r) => {
      const a = deriveAmounts(t, s, r);
      const on = s === 'AUTHORIZED';
      assert.equal(a.available_to_capture, on ? Math.max(0, t.total_authorized - t.total_captured - t.total_voided - r.capture - r.void) : 0);
      assert.equal(a.available_to_void, a.available_to_capture);
      assert.equal(a.available_to_refund, on ? Math.max(0, t.total_captured - t.total_refunded - r.refund) : 0);
      for (const op of ['capture', 'refund', 'void'] as const) assert.equal(a[`available_to_${op}`], availableFor(op, s, t, r));
      assert.ok(Object.values(a).every((x) => x >= 0));
      const o = deriveOverview(a);
      assert.equal(o.captured === 'NOT', t.total_captured === 0);
    }));
  });

  it('allocates exactly the amount, within each slice, gift cards first on capture and cards first on refund', () => {
    const slice = fc.record({ method: fc.constantFrom('CARD', 'GIFT_CARD'), authorized: fc.integer({ min: 1, max: 10000 }), captured: fc.integer({ min: 0, max: 10000 }) })
      .map((s) => ({ ...s, captured: Math.min(s.captured, s.authorized) }));
    fc.assert(fc.property(fc.array(slice, { minLength: 1, maxLength: 4 }), fc.integer({ min: 1, max: 40000 }), fc.boolean(), (raw, amount, refund) => {
      const slices = raw.map((s, i) => ({ id: String(i), method: s.method, authorized: s.authorized, captured: s.captured, voided: 0, refunded: 0 }));
      const room = (s: (typeof slices)[number]) => (refund ? s.captured : s.authorized - s.captured);
      const total = slices.reduce((x, s) => x + room(s), 0);
      if (amount > total) {
        assert.throws(() => allocate(refund ? 'refund' : 'capture', amount, slices));
        return;
      }
      const out = allocate(refund ? 'refund' : 'capture', amount, slices);
      assert.equal(out.reduce((x, a) => x + a.amount, 0), amount);
      for (const a of out) assert.ok(a.amount > 0 && a.amount <= room(slices[Number(a.id)]!));
      const firstKind = refund ? 'CARD' : 'GIFT_CARD';
      const used = out.map((a) => slices[Number(a.id)]!.method);
      const preferredRoom = slices.filter((s) => s.method === firstKind).reduce((x, s) => x + room(s), 0);
      if (used.some((k) => k !== firstKind)) assert.ok(amount > preferredRoom || preferredRoom === 0 || out.filter((a) => slices[Number(a.id)]!.method === firstKind).reduce((x, a) => x + a.amount, 0) === preferredRoom);
    }));
  });
});

describe('amounts invariants over random operations (fast-check)', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
  });
  after(() => t.close());

  it('always agree with the ledger and refuse exactly what is not available', async () => {
    const opArb = fc.record({ kind: fc.constantFrom('captures', 'refunds', 'voids'), amount: fc.integer({ min: 1, max: 6000 }) });
    await fc.assert(fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 8 }), async (ops) => {
      const created = await t.app.inject({ method: 'POST', url: '/v2/payments', headers: m.auth, payload: {
        amount: 10000, currency: 'EUR',
        split: [{ partner: 'gift-sim', method: 'GIFT_CARD', amount: 2500, instrument: { type: 'GIFT_CARD', number: `60362800${String(Math.floor(Math.random() * 1e8)).padStart(8, '0')}`.slice(0, 16) } },
          { partner: 'card-sim', method: 'CARD', amount: 7500, instrument: card }],
      } });
      let p = created.json();
      assert.equal(p.authorization.status, 'AUTHORIZED');
      for (const o of ops) {
        const field = o.kind === 'captures' ? 'available_to_capture' : o.kind === 'refunds' ? 'available_to_refund' : 'available_to_void';
        const available = p.amounts[field] as number;
        const res = await t.app.inject({ method: 'POST', url: `/v2/payments/${p.id}/${o.kind}`, headers: m.auth, payload: { amount: o.amount } });
        if (o.amount > available) {
          expectProblem(res, 400);
          continue;
        }
        assert.equal(res.statusCode, 200, res.body);
        const next = res.json();
        assert.ok(next.version > p.version);
        p = next;
        const a = p.amounts;
        assert.equal(a.available_to_capture, Math.max(0, a.total_authorized - a.total_captured - a.total_voided));
        assert.equal(a.available_to_void, a.available_to_capture);
        assert.equal(a.available_to_refund, a.total_captured - a.total_refunded);
        assert.ok(a.total_captured + a.total_voided <= a.total_authorized);
        assert.ok(a.total_refunded <= a.total_captured);
        for (const v of Object.values(a)) assert.ok(Number.isInteger(v) && (v as number) >= 0);
      }
    }), { numRuns: 15 });
  });
});
