// A payment's page (facts, split, partner transactions, timeline, the action forms) and the
// confirmation of an action. A form that moves money carries an idempotency key made when
// the form was shown: a double click or a reload moves money once.
import { randomUUID } from 'node:crypto';
import type { VNode } from 'preact';
import type { PaymentViewT } from '../payments/payments.service.ts';
import { majorText } from '../money/currency.ts';
import type { EventView } from '../webhooks/webhooks.service.ts';
import type { Member } from './auth.routes.ts';
import { can } from './members.ts';
import { cardsOf } from './payments-csv.ts';
import { ACTIONS } from './payment-actions.ts';
import { Hidden, Messages, PostForm, Table } from './parts.tsx';
import { money, when } from './views.ts';

export interface DashboardActionRow { user_email: string; action: string; amount: number | null; created_at: Date }

function ActionForm({ m, p, action, withAmount }: { m: Member; p: PaymentViewT; action: string; withAmount: boolean }): VNode | null {
  const a = ACTIONS[action]!;
  const available = a.available(p);
  if (!can(m.entity.role, a.needs) || available <= 0) return null;
  const id = `${action}-amount`;
  return (
    <PostForm action={`/dashboard/${m.entity.entity_id}/payments/${p.id}/${action}`} csrf={m.csrf}>
      <h3>{a.verb}</h3>
      <Hidden name="idempotency_key" value={randomUUID()} />
      {withAmount ? (
        <>
          <label for={id}>Amount ({p.currency}), at most {money(available, p.currency)}</label>
          <input id={id} name="amount" inputmode="decimal" required value={majorText(available, p.currency, false)} />
        </>
      ) : <p>Releases {money(available, p.currency)} not captured.</p>}
      <button type="submit" class={action === 'void' ? 'danger' : undefined}>{a.verb}…</button>
    </PostForm>
  );
}

export interface PaymentDetailProps {
  m: Member;
  p: PaymentViewT;
  actions: DashboardActionRow[];
  events: EventView[];
  notice?: string | undefined;
  error?: string | undefined;
}

export function PaymentDetail({ m, p, actions, events, notice, error }: PaymentDetailProps): VNode {
  const zone = m.entity.time_zone;
  const admin = can(m.entity.role, 'admin');
  const ops = [...p.captures.map((o) => ({ ...o, kind: 'Capture' })), ...p.refunds.map((o) => ({ ...o, kind: 'Refund' })), ...p.voids.map((o) => ({ ...o, kind: 'Void' }))];
  const iso = (d: string | Date) => new Date(d).toISOString();
  const timeline = [
    { at: iso(p.created_at), text: `Created: ${money(p.amount, p.currency)}, authorization ${p.authorization.status}` },
    ...ops.map((o) => ({ at: iso(o.created_at), text: `${o.kind} of ${money(o.amount, p.currency)}: ${o.status}` })),
    ...actions.map((a) => ({ at: a.created_at.toISOString(), text: `${a.action} of ${a.amount === null ? '' : money(a.amount, p.currency)} asked by ${a.user_email} (dashboard)` })),
    ...events.map((ev) => ({
      at: iso(ev.created_at),
      text: `Webhook ${ev.type}: ${ev.status === 'NO_DESTINATION' ? 'not sent (no endpoint)' : ev.status.toLowerCase()}${ev.deliveries.length > 1 ? ` (${ev.deliveries.length} deliveries)` : ''}`,
      href: admin ? `/dashboard/${m.entity.entity_id}/webhooks/${ev.id}` : undefined,
    })),
  ].sort((a, b) => Date.parse(a.at) - Date.parse(b.at)) as Array<{ at: string; text: string; href?: string | undefined }>;
  const txs = [...p.authorization.partner_transactions, ...ops.flatMap((o) => o.partner_transactions)];
  const forms = [
    ActionForm({ m, p, action: 'capture', withAmount: true }), ActionForm({ m, p, action: 'refund', withAmount: true }), ActionForm({ m, p, action: 'void', withAmount: false }),
  ].filter((f) => f !== null);
  // The card as the shopper knows it (network and last four; payd keeps no more of it).
  const cards = cardsOf(p).map((c) => `${c.network} •••• ${c.last_four}${c.expiry_month ? ` (expires ${c.expiry_month}/${String(c.expiry_year ?? '').slice(-2)})` : ''}`);
  return (
    <>
      <Messages notice={notice} error={error} />
      <dl class="facts">
        <dt>Payment</dt><dd><code>{p.id}</code></dd>
        <dt>Created</dt><dd>{when(p.created_at, zone)}</dd>
        <dt>Amount</dt><dd>{money(p.amount, p.currency)}</dd>
        {cards.length ? <><dt>Card</dt><dd id="payment-card">{cards.join(', ')}</dd></> : null}
        <dt>Authorization</dt><dd class="status">{p.authorization.status}</dd>
        <dt>Captured</dt><dd>{money(p.amounts.total_captured, p.currency)} ({money(p.amounts.available_to_capture, p.currency)} left to capture)</dd>
        <dt>Refunded</dt><dd>{money(p.amounts.total_refunded, p.currency)} ({money(p.amounts.available_to_refund, p.currency)} left to refund)</dd>
        <dt>Voided</dt><dd>{money(p.amounts.total_voided, p.currency)}</dd>
        <dt>Order</dt><dd>{p.order_reference ?? '—'}</dd>
      </dl>
      <h2>Split</h2>
      <Table label="Split" cols={['Partner', 'Method', ['Amount', 'num']]}
        rows={p.split.map((s) => <tr><td>{s.partner}</td><td>{s.method}</td><td class="num">{money(s.amount, p.currency)}</td></tr>)} />
      <h2>Partner transactions</h2>
      <Table label="Partner transactions" cols={['Partner', 'Status', ['Amount', 'num'], 'Reference', 'Code']}
        rows={txs.map((t) => <tr><td>{t.partner}</td><td>{t.status}</td><td class="num">{money(t.amount, p.currency)}</td><td><code>{t.partner_reference ?? '—'}</code></td><td>{t.status_code ?? ''}</td></tr>)} />
      <h2>Timeline</h2>
      <ol class="timeline">{timeline.map((t) => <li><time datetime={t.at}>{when(t.at, zone)}</time>: {t.href ? <a href={t.href}>{t.text}</a> : t.text}</li>)}</ol>
      {forms.length ? <><h2>Actions</h2><div class="actions">{forms}</div></> : m.entity.role === 'viewer' ? <p>Your role is read only.</p> : null}
    </>
  );
}

/** The confirmation of an action: the same form's key, amount and a confirm field, posted once. */
export function ConfirmAction({ m, p, action, amount, typed, idempotencyKey }: { m: Member; p: PaymentViewT; action: string; amount: number | undefined; typed: string | undefined; idempotencyKey: string }): VNode {
  const a = ACTIONS[action]!;
  const base = `/dashboard/${m.entity.entity_id}/payments/${p.id}`;
  return (
    <>
      <p>{a.verb} {amount === undefined ? `the ${money(a.available(p), p.currency)} not captured` : money(amount, p.currency)} of payment {p.order_reference ?? p.id}? This moves money at the partner and cannot be undone here.</p>
      <PostForm action={`${base}/${action}`} csrf={m.csrf} class="confirm">
        <Hidden name="idempotency_key" value={idempotencyKey} />
        {amount === undefined ? null : <Hidden name="amount" value={typed ?? ''} />}
        <Hidden name="confirm" value="yes" />
        <button type="submit" class={a.kind === 'VOID' ? 'danger' : undefined}>Yes, {a.verb.toLowerCase()}</button> <a href={base}>No, go back</a>
      </PostForm>
    </>
  );
}
