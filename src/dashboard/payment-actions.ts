// A payment as the dashboard finds it, and its money actions: one per operation of the
// table (transitions.ts), offered when the payment accepts it now and the role may.
import { isProblem, PROBLEM_TYPE } from '../platform/http/problem.ts';
import type { PaymentsService, PaymentViewT } from '../payments/payments.service.ts';
import type { Reserved } from '../payments/amounts.ts';
import { OPERATIONS, OPERATION_NAMES, type OperationKindOf, type OperationName, availableFor } from '../payments/transitions.ts';
import type { Role } from './members.ts';

/** What operations in flight (PENDING) reserve, per operation, as the Payment shows them. */
function reservedOfView(p: PaymentViewT): Reserved {
  const sum = (ops: Array<{ status: string; amount: number }>) => ops.filter((o) => o.status === 'PENDING').reduce((s, o) => s + o.amount, 0);
  return { capture: sum(p.captures), refund: sum(p.refunds), void: sum(p.voids) };
}

export interface PaymentAction { kind: OperationKindOf<OperationName>; path: string; verb: string; needs: Role; available: (p: PaymentViewT) => number }

/** The action forms: one per operation of the table (transitions.ts), shown when the payment accepts it now. */
export const ACTIONS: Record<string, PaymentAction> = Object.fromEntries(
  OPERATION_NAMES.map((op) => [op, {
    kind: OPERATIONS[op].kind, path: OPERATIONS[op].path, verb: OPERATIONS[op].verb, needs: 'operator' as Role,
    available: (p: PaymentViewT) => availableFor(op, p.authorization.status, p.amounts, reservedOfView(p)),
  }]));

/** The payment, or undefined when the entity has none of that id. */
export async function storedPayment(payments: PaymentsService, entityId: string, id: string): Promise<PaymentViewT | undefined> {
  try {
    return await payments.getStored(entityId, id);
  } catch (err) {
    if (isProblem(err, PROBLEM_TYPE.notFound)) return undefined;
    throw err;
  }
}
