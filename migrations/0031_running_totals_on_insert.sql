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
-- the payment they already make, or in one more write of it when they made none, and
-- insert the rows marked: sums_by_statement 1 on a ledger row, counted_by_statement true
-- on an operation. The insert triggers stay for unmarked rows only: those of a process
-- of the previous version still running during a rolling upgrade (docs/deploy.md:
-- migrate first, then restart the processes one by one), which count on the triggers as
-- before. The update trigger of 0015 counts every later change of a ledger row's status
-- or amount (migration 0032 for the changes a statement counts itself).
ALTER TABLE partner_transactions ADD COLUMN sums_by_statement integer NOT NULL DEFAULT 0;
ALTER TABLE payment_operations ADD COLUMN counted_by_statement boolean NOT NULL DEFAULT false;

DROP TRIGGER partner_transactions_totals_ins ON partner_transactions;
CREATE TRIGGER partner_transactions_totals_ins AFTER INSERT ON partner_transactions
  FOR EACH ROW WHEN (NEW.status = 'PENDING' AND NEW.sums_by_statement = 0) EXECUTE FUNCTION payd_ledger_totals();

DROP TRIGGER payment_operations_count ON payment_operations;
CREATE TRIGGER payment_operations_count AFTER INSERT ON payment_operations
  FOR EACH ROW WHEN (NEW.status = 'PENDING' AND NOT NEW.counted_by_statement) EXECUTE FUNCTION payd_operation_count();
