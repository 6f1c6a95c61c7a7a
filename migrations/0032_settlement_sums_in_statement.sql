-- The settlement of a ledger row by the statements that conclude a payment or an
-- operation in one write (payd issue 16; docs/performance.md, session 21) adds its sums
-- to the payment in that statement's own write of the payment, instead of the update
-- trigger of 0015 writing the payment once more after it. Those statements
-- (paymentsRepo.settleTxAndConclude, paymentsRepo.concludeOperation) move the row's
-- sums_by_statement (migration 0031) in the same UPDATE that changes its status; the
-- trigger counts a change of status or amount only when sums_by_statement did not move,
-- as for every other statement that settles a row (a partner's answer recorded alone,
-- recovery, a notification, a process of the previous version during a rolling
-- upgrade). The comparison is of the row before and after one UPDATE: it says which
-- statement wrote the sums of that one change, never of a later one.
DROP TRIGGER partner_transactions_totals_upd ON partner_transactions;
CREATE TRIGGER partner_transactions_totals_upd AFTER UPDATE OF status, amount ON partner_transactions
  FOR EACH ROW WHEN ((OLD.status IS DISTINCT FROM NEW.status OR OLD.amount IS DISTINCT FROM NEW.amount)
                     AND OLD.sums_by_statement = NEW.sums_by_statement)
  EXECUTE FUNCTION payd_ledger_totals();
