// The Requests page (admins): the entity's recent payment API calls, newest first.
import type { VNode } from 'preact';
import type { RequestLogRow } from './dashboard.service.ts';
import { REQUEST_LOG_RETENTION_DAYS } from '../platform/observability/request-log.ts';
import { Table } from './parts.tsx';
import { when } from './views.ts';

export interface RequestsProps {
  zone: string;
  rows: RequestLogRow[];
  errorsOnly: boolean;
  /** The request log's bound (calls a second; 0: off). */
  perSecond: number;
  /** The query string of the next (older) page, if any. */
  older?: string | undefined;
  base: string;
}

export function RequestsBody({ zone, rows, errorsOnly, perSecond, older, base }: RequestsProps): VNode {
  const body = rows.map((r) => (
    <tr class={r.status >= 400 ? 'failed' : undefined}>
      <td><time datetime={r.created_at}>{when(r.created_at, zone)}</time></td><td>{r.method}</td><td><code>{r.route}</code></td>
      <td class="num status">{r.status}</td><td class="num">{r.duration_ms} ms</td><td><code>{r.idempotency_key ?? '—'}</code></td><td><code>{r.request_id}</code></td>
    </tr>
  ));
  return (
    <>
      <p>
        The calls made to the payment API with this merchant's API keys and tokens, newest first, kept {REQUEST_LOG_RETENTION_DAYS} days. Bodies, query strings and credentials are never recorded.
        {' '}A call shows here within about a second{perSecond > 0 ? `; past ${perSecond} calls a second, successful calls are not all kept (errors are)` : ' (the request log is off on this payd: PAYD_REQUEST_LOG_PER_SECOND=0)'}.
      </p>
      <form method="get" class="filters" aria-label="Filter requests">
        <div><input type="checkbox" id="errors" name="errors" value="1" checked={errorsOnly} /> <label for="errors" class="inline">Errors only (status 400 and above)</label></div>
        <div><button type="submit">Show</button></div>
      </form>
      <Table label="Requests" class="log" cols={['Time', 'Method', 'Path', ['Status', 'num'], ['Duration', 'num'], 'Idempotency key', 'Request id']} rows={body} empty="No request recorded." />
      {older ? <nav class="pager" aria-label="Pages"><a rel="next" href={`${base}?${older}`}>Older</a></nav> : null}
    </>
  );
}
