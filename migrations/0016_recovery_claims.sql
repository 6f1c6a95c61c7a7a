-- Recovery claims: a recovery worker settles a payment only while it holds the
-- payment's claim (a lease), so that two payd processes never ask the partners about,
-- or resend, the same PENDING transaction at the same time. A worker that dies leaves
-- its claim, which lapses at `until`; the worker renews it before each partner call.
CREATE TABLE recovery_claims (
  payment_id  uuid PRIMARY KEY REFERENCES payments (id) ON DELETE CASCADE,
  owner       uuid NOT NULL,
  until       timestamptz NOT NULL
);
