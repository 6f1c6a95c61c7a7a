// The payments list: the search form (filters in the merchant's terms), the problems of the
// search, the page of payments, the pager and the link to the CSV export of the search.
import type { VNode } from 'preact';
import { CURRENCIES } from '../payments/common.schemas.ts';
import type { PaymentViewT } from '../payments/payments.service.ts';
import { METHOD_NAMES } from '../partners/methods.ts';
import { EXPORT_MAX } from './payments-csv.ts';
import { type ListQuery, STATUSES } from './payments-query.ts';
import { Table } from './parts.tsx';
import { money, when } from './views.ts';

const Option = ({ value, label, current }: { value: string; label: string; current?: string | undefined }) =>
  <option value={value} selected={current === value}>{label}</option>;

function Select({ id, label, values, current }: { id: string; label: string; values: ReadonlyArray<[string, string]>; current: string | undefined }): VNode {
  return (
    <div><label for={id}>{label}</label><select id={id} name={id}><Option value="" label="Any" />{values.map(([v, l]) => <Option value={v} label={l} current={current} />)}</select></div>
  );
}

function Field({ id, label, value, type = 'text', amount }: { id: string; label: string; value: string | undefined; type?: 'text' | 'date'; amount?: boolean }): VNode {
  const v = value ?? '';
  return (
    <div><label for={id}>{label}</label>{type === 'date'
      ? <input id={id} name={id} type="date" value={v} />
      : <input id={id} name={id} type="text" value={v} inputmode={amount ? 'decimal' : undefined} placeholder={amount ? '0.00' : undefined} />}</div>
  );
}

/** The problems of a search (each names its field). */
export const Problems = ({ problems }: { problems: string[] }): VNode => <div class="error" role="alert"><ul>{problems.map((p) => <li>{p}</li>)}</ul></div>;

export const ExportRefused = ({ entityId, problems }: { entityId: string; problems: string[] }): VNode => (
  <><Problems problems={problems} /><p><a href={`/dashboard/${entityId}/payments`}>Back to the payments</a></p></>
);

export interface PaymentsListProps {
  entityId: string;
  zone: string;
  query: ListQuery;
  payments: PaymentViewT[];
  /** The pager's links (query strings), when the search ran. */
  pager?: { newer?: string | undefined; older?: string | undefined } | undefined;
}

export function PaymentsList({ entityId, zone, query: { filter, problems, keep, str }, payments, pager }: PaymentsListProps): VNode {
  const base = `/dashboard/${entityId}/payments`;
  const rows = payments.map((p) => (
    <tr>
      <td>{when(p.created_at, zone)}</td><td><a href={`${base}/${p.id}`}>{p.order_reference ?? p.id.slice(0, 8)}</a></td>
      <td class="num">{money(p.amount, p.currency)}</td><td class="status">{p.authorization.status}</td>
      <td>{p.split.map((s) => s.method).join(' + ')}</td><td class="num">{money(p.amounts.total_captured, p.currency)}</td><td class="num">{money(p.amounts.total_refunded, p.currency)}</td>
    </tr>
  ));
  return (
    <>
      <form method="get" class="filters" role="search" aria-label="Find payments">
        <Field id="order_reference" label="Search (order reference, payment id, email, last four digits)" value={str('order_reference')} />
        <Select id="status" label="Status" values={STATUSES.map((s) => [s, s.charAt(0) + s.slice(1).toLowerCase()])} current={filter.authorization_status} />
        <Select id="method" label="Method" values={METHOD_NAMES.map((x) => [x, x])} current={filter.method} />
        <Select id="currency" label="Currency" values={CURRENCIES.map((x) => [x, x])} current={filter.currency} />
        <Field id="amount_min" label="Amount from" value={str('amount_min')} amount />
        <Field id="amount_max" label="Amount to" value={str('amount_max')} amount />
        <Field id="from" label="Created from" value={str('from')} type="date" />
        <Field id="to" label="Created to" value={str('to')} type="date" />
        <div><button type="submit">Search</button></div>
      </form>
      {problems.length ? <Problems problems={problems} /> : null}
      <Table label="Payments" cols={['Created', 'Order', ['Amount', 'num'], 'Status', 'Method', ['Captured', 'num'], ['Refunded', 'num']]} rows={rows} empty="No payment matches." />
      {pager ? (
        <nav class="pager" aria-label="Pages">
          {pager.newer ? <a href={`${base}?${pager.newer}`} rel="prev">Newer</a> : null}
          {pager.older ? <a href={`${base}?${pager.older}`} rel="next">Older</a> : null}
        </nav>
      ) : null}
      {problems.length ? null : (
        <p>
          <a href={`${base}.csv${keep.size ? `?${keep.toString()}` : ''}`} download>Download these payments (CSV)</a>{' '}
          <span class="hint">every page of this search, newest first, at most {EXPORT_MAX.toLocaleString('en-US')}</span>
        </p>
      )}
    </>
  );
}
