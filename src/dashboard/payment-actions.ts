// A payment as the dashboard finds it, and its money actions: one per operation of the
// table (transitions.ts), offered when the payment accepts it now and the role may.
import { isProblem, PROBLEM_TYPE } from '../platform/http/problem.ts';
import type { PaymentsService, PaymentViewT } from '../payments/payments.service.ts';
import { OPERATIONS, OPERATION_NAMES, type OperationKindOf, type OperationName } from '../payments/transitions.ts';
import type { Role } from './members.ts';

export interface PaymentAction { kind: OperationKindOf<OperationName>; path: string; verb: string; needs: Role; available: (p: PaymentViewT) => number }

/**
 * The action forms: one per operation of the table (transitions.ts), shown when the
 * payment accepts it now: its amounts.available_to_<op>, which is the table's availableFor
 * (the state, the balance, less what operations in flight reserve).
 */
export const ACTIONS: Record<string, PaymentAction> = Object.fromEntries(
  OPERATION_NAMES.map((op) => [op, {
    kind: OPERATIONS[op].kind, path: OPERATIONS[op].path, verb: OPERATIONS[op].verb, needs: 'operator' as Role,
    available: (p: PaymentViewT) => p.amounts[`available_to_${op}`],
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
