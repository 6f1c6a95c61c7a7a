// A client session's status is a closed type (issue 44, closed types): stored statuses
// (CREATED, SUBMITTED, ABORTED_BY_MERCHANT) apart from the shown ones (EXPIRED too, read
// from a CREATED session past its expiry). The @ts-expect-error lines below fail the type
// check (npm run typecheck, in CI) if a loose string or a shown-only status ever compiles.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { clientSessionsRepo } from '../../src/payments/client-sessions.repo.ts';
import { type ClientSessionRow, SESSION_STATUSES, STORED_SESSION_STATUSES, type StoredSessionStatus } from '../../src/payments/client-sessions.repo.ts';
import { ClientSessionsService } from '../../src/payments/client-sessions.service.ts';
import { ClientSession } from '../../src/payments/client-sessions.schemas.ts';

describe('client session status types', () => {
  it('EXPIRED is shown, never stored; a loose string is neither', () => {
    // @ts-expect-error: EXPIRED is read, never written
    const expired: StoredSessionStatus = 'EXPIRED';
    // @ts-expect-error: not a status
    const loose: StoredSessionStatus = 'PAID';
    assert.deepEqual([expired, loose], ['EXPIRED', 'PAID']);
    // setStatus takes stored statuses only.
    type SetStatus = Parameters<typeof clientSessionsRepo.setStatus>[2];
    // @ts-expect-error: EXPIRED cannot be written
    const write: SetStatus = 'EXPIRED';
    assert.equal(write, 'EXPIRED');
    // abortRefusal decides on shown statuses and the payment's authorization status only.
    // @ts-expect-error: not an authorization status
    ClientSessionsService.abortRefusal('CREATED', 'CAPTURED');
  });

  it('the API enum is the stored statuses plus EXPIRED, and a CREATED session past its expiry reads EXPIRED', () => {
    assert.deepEqual([...SESSION_STATUSES].sort(), [...STORED_SESSION_STATUSES, 'EXPIRED'].sort());
    const schemaValues = JSON.stringify(ClientSession.properties.status);
    for (const s of SESSION_STATUSES) assert.ok(schemaValues.includes(`"${s}"`), `${s} in the API's enum`);
    const row = { status: 'CREATED', expires_at: new Date(1000) } as ClientSessionRow;
    assert.equal(ClientSessionsService.effectiveStatus(row, 999), 'CREATED');
    assert.equal(ClientSessionsService.effectiveStatus(row, 1000), 'EXPIRED');
    assert.equal(ClientSessionsService.effectiveStatus({ ...row, status: 'SUBMITTED' }, 5000), 'SUBMITTED');
  });
});
