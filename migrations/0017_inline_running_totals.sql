-- The running totals of migration 0015, without a second write of the payment row when
-- the statement that inserts settled rows already wrote the sums (payd issue 16; measured
-- in docs/performance.md, "running totals"). The triggers of 0015 updated the payment
-- once per inserted ledger row and once per inserted operation: a creation answered
-- inline wrote its payment twice, a capture answered inline wrote it three times (its
-- version, then the operation count, then the captured sum), each a new row version.
--
-- Now a ledger row or an operation inserted PENDING (the locked path: it reserves, calls
-- the partner, then settles the row with an UPDATE) is counted by the triggers as before,
-- and so is every later change of a row's status or amount. A ledger row or an operation
-- inserted already settled comes only from the statements of the inline paths
-- (paymentsRepo.insertConcluded, paymentsRepo.insertOperationConcluded), which add what
-- those rows count (ledgerSums in src/payments/payments.repo.ts, the same rules as
-- payd_ledger_totals) to the payment in the same statement.
DROP TRIGGER partner_transactions_totals_ins ON partner_transactions;
CREATE TRIGGER partner_transactions_totals_ins AFTER INSERT ON partner_transactions
  FOR EACH ROW WHEN (NEW.status = 'PENDING') EXECUTE FUNCTION payd_ledger_totals();

DROP TRIGGER payment_operations_count ON payment_operations;
CREATE TRIGGER payment_operations_count AFTER INSERT ON payment_operations
  FOR EACH ROW WHEN (NEW.status = 'PENDING') EXECUTE FUNCTION payd_operation_count();
