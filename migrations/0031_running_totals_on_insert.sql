-- Every statement that inserts ledger rows or operations adds them to their payment's
-- running totals itself, in the same statement (payd issue 16; docs/performance.md,
-- session 21). Migration 0017 did it for the statements that insert settled rows (the
-- inline paths); the rows inserted PENDING (the paths that call partners: a creation's
-- authorization written ahead, an operation's reservation) were still counted by the
-- insert triggers of 0015, each a second write of the payment row after the statement's
-- own (a reservation wrote it three times: its version, the operation count, the
-- reserved sum).
--
-- The statements (src/payments/payments.repo.ts: insertWithTx, insertTx, insertConcluded,
-- reserveOperation, reserveOperationAt, insertOperationConcluded, insertOperation) add
-- what their rows count by the rules of payd_ledger_totals (ledgerSums), in the write of
-- the payment they already make, or in one more write of it when they made none. The
-- update trigger of 0015 still counts every later change of a ledger row's status or
-- amount: the settlement of a PENDING row by a partner's answer.
DROP TRIGGER partner_transactions_totals_ins ON partner_transactions;
DROP TRIGGER payment_operations_count ON payment_operations;
DROP FUNCTION payd_operation_count();
