// Ledger rows are discriminated by kind (issue 44, closed types): an authorization row is
// PENDING, AUTHORIZED, REFUSED or ERROR; a capture's, refund's or void's is PENDING,
// SUCCESS or FAILURE. The type refuses the mix at compile time (the @ts-expect-error
// below fails the type check if it ever compiles), and rows built from loose parts
// (newTxRow, settledTxRow) refuse it at run time.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { newTxRow, type NewPartnerTx, type PartnerTxRow, settledTxRow } from '../../src/payments/payments.repo.ts';

const base: NewPartnerTx = {
  id: '00000000-0000-4000-8000-000000000010', payment_id: '00000000-0000-4000-8000-000000000001', operation_id: null, parent_id: null,
  kind: 'AUTHORIZATION', seq: 1, partner: 'card-sim', method: 'CARD', amount: 1000, status: 'PENDING', partner_key: 'k', card: null, save_token: null,
};
const at = new Date('2026-01-01T00:00:00Z');

describe('ledger rows', () => {
  it('an AUTHORIZATION row in SUCCESS does not type-check', () => {
    const row = newTxRow(base, at, at);
    // @ts-expect-error: SUCCESS is an operation row's status, not an authorization's
    const wrong: PartnerTxRow = { ...row, kind: 'AUTHORIZATION', status: 'SUCCESS' };
    assert.equal(wrong.status, 'SUCCESS');
  });

  it('rows built from loose parts keep kind and status together, or throw', () => {
    assert.equal(newTxRow(base, at, at).status, 'PENDING');
    assert.throws(() => newTxRow({ ...base, status: 'SUCCESS' }, at, at), /AUTHORIZATION cannot be SUCCESS/);
    assert.throws(() => newTxRow({ ...base, kind: 'CAPTURE', status: 'AUTHORIZED' }, at, at), /CAPTURE cannot be AUTHORIZED/);
    const pending = newTxRow(base, at, at);
    assert.equal(settledTxRow(pending, { status: 'AUTHORIZED' }, at).status, 'AUTHORIZED');
    assert.throws(() => settledTxRow(pending, { status: 'FAILURE' }, at), /AUTHORIZATION cannot be FAILURE/);
    const capture = newTxRow({ ...base, kind: 'CAPTURE', seq: 2 }, at, at);
    assert.equal(settledTxRow(capture, { status: 'SUCCESS' }, at).status, 'SUCCESS');
    assert.throws(() => settledTxRow(capture, { status: 'REFUSED' }, at), /CAPTURE cannot be REFUSED/);
  });
});
