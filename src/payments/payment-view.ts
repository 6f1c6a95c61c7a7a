// Builds the Payment resource from its rows: the ledger (partner transactions) is the
// source of every total; amounts.ts derives the rest (what each operation may take, by
// the table of transitions.ts).
import { type Reserved, type Slice, type Totals, deriveAmounts, deriveOverview } from './amounts.ts';
import { type CountedRow, type LedgerSums, ledgerTotals } from './ledger-totals.ts';
import { OPERATIONS } from './transitions.ts';
import type { OperationRow, PartnerTxRow, PaymentBase, PaymentTotals } from './payments.repo.ts';

// The amounts of the Payment are the running-totals rule of ledger-totals.ts, the same
// function whose sums the statements store on the payment row.

export function totalsOf(txs: readonly CountedRow[]): Totals {
  return totalsOfSums(ledgerTotals(txs));
}

export function reservedOf(txs: readonly CountedRow[]): Reserved {
  return reservedOfSums(ledgerTotals(txs));
}

function totalsOfSums(s: LedgerSums): Totals {
  return {
    authorize_pending: s.authorize_pending, total_authorized: s.total_authorized, total_voided: s.total_voided,
    total_captured: s.total_captured, total_refunded: s.total_refunded,
  };
}

function reservedOfSums(s: LedgerSums): Reserved {
  return { capture: s.reserved_capture, void: s.reserved_void, refund: s.reserved_refund };
}

/**
 * Each authorization with what its children took or reserved (the rule applied to the
 * authorization and its children): captures settled and PENDING apart (a refund draws
 * only on settled ones), voids and refunds SUCCESS or PENDING together.
 */
export function slicesOf(txs: PartnerTxRow[]): Slice[] {
  const children = new Map<string, PartnerTxRow[]>();
  for (const t of txs) {
    if (t.parent_id === null) continue;
    const list = children.get(t.parent_id);
    if (list) list.push(t);
    else children.set(t.parent_id, [t]);
  }
  return txs
    .filter((t) => t.kind === 'AUTHORIZATION' && t.status === 'AUTHORIZED')
    .map((a) => {
      const s = ledgerTotals([a, ...(children.get(a.id) ?? [])]);
      return {
        id: a.id, method: a.method, authorized: a.amount,
        captured: s.total_captured, capturing: s.reserved_capture,
        voided: s.total_voided + s.reserved_void, refunded: s.total_refunded + s.reserved_refund,
      };
    });
}

/**
 * The saved card of a transaction: one that paid with a saved card, or saved again a card
 * the customer had saved (merged into it, migration 0050), carries its id in the card
 * facts; otherwise the authorization that saved one is its id (the database wrote it with
 * the answer, migration 0046).
 */
function savedCardOf(t: PartnerTxRow): { saved_card_id?: string } {
  if (t.kind !== 'AUTHORIZATION') return {};
  const id = t.card?.saved_card_id;
  if (t.token_saved && t.status === 'AUTHORIZED' && t.partner_reference) return { saved_card_id: typeof id === 'string' ? id : t.id };
  return typeof id === 'string' ? { saved_card_id: id } : {};
}

function txView(t: PartnerTxRow) {
  return {
    id: t.id,
    created_at: t.created_at,
    updated_at: t.updated_at,
    status: t.status,
    amount: t.amount,
    partner: t.partner,
    method: t.method,
    ...(t.card ? { card: t.card } : {}),
    ...(t.partner_reference ? { partner_reference: t.partner_reference } : {}),
    ...(t.partner_status ? { partner_status: t.partner_status } : {}),
    ...(t.partner_status_description ? { partner_status_description: t.partner_status_description } : {}),
    ...(t.status_code ? { status_code: t.status_code } : {}),
    ...(t.save_token !== null ? { save_token: t.save_token } : {}),
    ...(t.save_token ? { token_saved: t.token_saved ?? false } : {}),
    ...savedCardOf(t),
  };
}

function operationView(o: OperationRow, children: PartnerTxRow[]) {
  return {
    id: o.id,
    amount: o.amount,
    created_at: o.created_at,
    updated_at: o.updated_at,
    triggered_by: o.triggered_by,
    ...(o.merchant_reference ? { merchant_reference: o.merchant_reference } : {}),
    ...(o.reason ? { reason: o.reason } : {}),
    status: o.status,
    partner_transactions: children.map(txView),
  };
}

/** The ledger rows of each operation, in ledger order (one pass over the ledger). */
export function childrenByOperation(txs: PartnerTxRow[]): Map<string, PartnerTxRow[]> {
  const out = new Map<string, PartnerTxRow[]>();
  for (const t of txs) {
    if (t.operation_id === null) continue;
    const list = out.get(t.operation_id);
    if (list) list.push(t);
    else out.set(t.operation_id, [t]);
  }
  return out;
}

// From the running totals on the payment row (migration 0015): what an operation decides
// on, without reading the ledger. They equal totalsOf / reservedOf / slicesOf of the
// ledger the row was read with (test/payments/operation-limits.test.ts checks it).

export function totalsOfPayment(p: PaymentTotals): Totals {
  return totalsOfSums(p);
}

export function reservedOfPayment(p: PaymentTotals): Reserved {
  return reservedOfSums(p);
}

/**
 * The slices of an AUTHORIZED payment's authorizations. With one authorized part (every
 * payment but a split), its children are all the payment's operations: the slice comes
 * from the running totals. A split's slices need its ledger (`ledger`, bounded by the
 * operation limit).
 */
export async function slicesOfPayment(p: PaymentTotals, auths: PartnerTxRow[], ledger: () => PartnerTxRow[] | Promise<PartnerTxRow[]>): Promise<Slice[]> {
  const authorized = auths.filter((t) => t.status === 'AUTHORIZED');
  if (authorized.length !== 1) return slicesOf(await ledger());
  const a = authorized[0]!;
  return [{
    id: a.id, method: a.method, authorized: a.amount,
    captured: p.total_captured + p.reserved_capture, voided: p.total_voided + p.reserved_void, refunded: p.total_refunded + p.reserved_refund,
  }];
}

/**
 * Names the shape paymentView builds. Stored views (GET with max-age) are served only
 * while theirs matches: change it with any change to the view or the Payment schema.
 * test/payments/stored-view.test.ts fails when the view of a sample payment changes
 * while this stays the same.
 */
export const VIEW_FORMAT = 'payment-view/6'; // 6: available_to_* by the table (0 unless AUTHORIZED, less what is in flight); 5: saved_card_id; 2: status enums in the schema; token_saved as the partner says; 3: links only for the operations allowed now; 4: the spec's four links always, again

export function paymentView(p: PaymentBase, txs: PartnerTxRow[], ops: OperationRow[], baseUrl: string) {
  const sums = ledgerTotals(txs);
  const amounts = deriveAmounts(totalsOfSums(sums), p.authorization_status, reservedOfSums(sums));
  const overview = deriveOverview(amounts);
  const auths = txs.filter((t) => t.kind === 'AUTHORIZATION');
  const redirection = auths.find((t) => t.status === 'PENDING' && t.redirection)?.redirection;
  const self = `${baseUrl}/v2/payments/${p.id}`;
  const children = childrenByOperation(txs);
  const opView = (o: OperationRow) => operationView(o, children.get(o.id) ?? []);
  return {
    id: p.id,
    created_at: p.created_at,
    version: p.version,
    entity_id: p.entity_id,
    amount: p.amount,
    currency: p.currency,
    allow_future_usage: p.allow_future_usage,
    ...(p.client_session_id ? { client_session_id: p.client_session_id } : {}),
    ...(p.order_reference ? { order_reference: p.order_reference } : {}),
    ...(p.order ? { order: p.order } : {}),
    capture_mode: p.capture_mode,
    amounts,
    overview,
    ...(p.browser ? { browser: p.browser } : {}),
    split: p.split.map((s) => ({ partner: s.partner, method: s.method, amount: s.amount })),
    authorization: {
      status: p.authorization_status,
      ...(redirection ? { redirection } : {}),
      partner_transactions: auths.map(txView),
    },
    captures: ops.filter((o) => o.kind === 'CAPTURE').map(opView),
    voids: ops.filter((o) => o.kind === 'VOID').map(opView),
    refunds: ops.filter((o) => o.kind === 'REFUND').map(opView),
    // The spec's four, always: its resource table lists self, capture, refund and void and
    // gives no rule for leaving one out, so the links do not follow the table. What the
    // payment accepts now is in amounts.available_to_*, which the table decides
    // (transitions.ts availableFor, the function the operations' plan decides by).
    links: {
      self: { href: self, method: 'GET' },
      ...Object.fromEntries((Object.keys(OPERATIONS) as Array<keyof typeof OPERATIONS>)
        .map((op) => [op, { href: `${self}/${OPERATIONS[op].path}`, method: 'POST' }])),
    },
  };
}
