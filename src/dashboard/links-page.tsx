// The payment links pages: the list (each link's customer URL to copy; operators and admins
// create and cancel, viewers read) and a link's page with its attempts.
import { randomUUID } from 'node:crypto';
import type { VNode } from 'preact';
import type { PaymentLinksService } from '../links/links.service.ts';
import type { Member } from './auth.routes.ts';
import { can } from './members.ts';
import { CopyField, Hidden, Messages, PostForm, Table } from './parts.tsx';
import { money, when } from './views.ts';

export const LINK_CURRENCIES = ['EUR', 'USD', 'GBP', 'CHF'];

export type LinkView = ReturnType<PaymentLinksService['view']>;
type LinkAttemptRow = Awaited<ReturnType<PaymentLinksService['attempts']>>[number];
const reference = (l: LinkView) => (l.order as { reference?: string } | undefined)?.reference;

function CreateLink({ m, values }: { m: Member; values: Record<string, string> }): VNode {
  const v = (k: string, d = '') => values[k] ?? d;
  return (
    <>
      <h2>New payment link</h2>
      <PostForm action={`/dashboard/${m.entity.entity_id}/links`} csrf={m.csrf} class="filters">
        <Hidden name="form_key" value={randomUUID()} />
        <div><label for="link-amount">Amount</label><input id="link-amount" name="amount" inputmode="decimal" required placeholder="0.00" value={v('amount')} /></div>
        <div><label for="link-currency">Currency</label><select id="link-currency" name="currency">{LINK_CURRENCIES.map((c) => <option selected={(values.currency ?? 'EUR') === c}>{c}</option>)}</select></div>
        <div><label for="link-order">Order reference</label><input id="link-order" name="order_reference" maxlength={255} value={v('order_reference')} /></div>
        <div><label for="link-days">Expires in (days)</label><input id="link-days" name="days" inputmode="numeric" value={v('days', '7')} /></div>
        <div><label for="link-return">Return URL (optional)</label><input id="link-return" name="return_url" type="url" value={v('return_url')} /></div>
        <div><label for="link-webhook">Webhook URL (optional: this link's events go there instead of the endpoint)</label><input id="link-webhook" name="webhook_url" type="url" value={v('webhook_url')} /></div>
        <div><button type="submit">Create the link</button></div>
      </PostForm>
    </>
  );
}

export function LinksBody({ m, links, message, values }: { m: Member; links: LinkView[]; message?: { notice?: string; error?: string } | undefined; values: Record<string, string> }): VNode {
  const act = can(m.entity.role, 'operator');
  const base = `/dashboard/${m.entity.entity_id}/links`;
  const zone = m.entity.time_zone;
  const rows = links.map((l) => (
    <tr>
      <td>{when(l.created_at, zone)}</td><td>{reference(l) ?? '—'}</td><td class="num">{money(l.amount, l.currency)}</td><td class="status">{l.status}</td><td>{when(l.expires_at, zone)}</td>
      <td><CopyField id={`url-${l.id}`} value={l.links.customer_url.href} label={`Customer URL of the link for ${money(l.amount, l.currency)}`} /></td>
      <td>
        <a href={`${base}/${l.id}`} aria-label={`Details of the link for ${money(l.amount, l.currency)}`}>Details</a>{' '}
        {l.payment_id ? <a href={`/dashboard/${m.entity.entity_id}/payments/${l.payment_id}`}>Payment</a> : null}
        {act && l.status === 'CREATED' ? <PostForm action={`${base}/${l.id}/cancel`} csrf={m.csrf}><button type="submit" class="secondary">Cancel</button></PostForm> : null}
      </td>
    </tr>
  ));
  return (
    <>
      <Messages notice={message?.notice} error={message?.error} />
      {act ? <CreateLink m={m} values={values} /> : null}
      <h2>Links</h2>
      <Table label="Payment links" cols={['Created', 'Order', ['Amount', 'num'], 'Status', 'Expires', 'Customer URL', 'Actions']} rows={rows} empty="No payment link yet." />
    </>
  );
}

export const linkTitle = (l: LinkView) => `Payment link ${reference(l) ?? l.id.slice(0, 8)}`;

/** A link's page: what it asks for, and its attempts (each a payment made through one of its checkout sessions: declined ones too), newest first. */
export function LinkDetail({ m, link, attempts }: { m: Member; link: LinkView; attempts: LinkAttemptRow[] }): VNode {
  const zone = m.entity.time_zone;
  const payments = `/dashboard/${m.entity.entity_id}/payments`;
  return (
    <>
      <p><a href={`/dashboard/${m.entity.entity_id}/links`}>All links</a></p>
      <dl class="facts">
        <dt>Link</dt><dd><code>{link.id}</code></dd><dt>Amount</dt><dd>{money(link.amount, link.currency)}</dd><dt>Status</dt><dd class="status">{link.status}</dd>
        <dt>Created</dt><dd>{when(link.created_at, zone)}</dd><dt>Expires</dt><dd>{when(link.expires_at, zone)}</dd><dt>Order</dt><dd>{reference(link) ?? '—'}</dd>
      </dl>
      <label for="link-url">Customer URL</label><CopyField id="link-url" value={link.links.customer_url.href} />
      <h2>Attempts</h2>
      <Table label="Attempts" cols={['When', 'Payment', ['Amount', 'num'], 'Authorization']} empty="No attempt yet."
        rows={attempts.map((r) => <tr><td>{when(r.created_at, zone)}</td><td><a href={`${payments}/${r.id}`}>{r.id.slice(0, 8)}</a></td><td class="num">{money(Number(r.amount), r.currency)}</td><td class="status">{r.authorization_status}</td></tr>)} />
    </>
  );
}
