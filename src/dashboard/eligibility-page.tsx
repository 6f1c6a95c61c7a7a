// The eligibility rules page (admins): the entity's rule set in plain words, and its editor
// (JSON, the shape of PUT /admin/v1/entities/{id}/eligibility-rules; docs/eligibility.md).
import type { VNode } from 'preact';
import type { Rule } from '../eligibility/eligibility.schemas.ts';
import type { Member } from './auth.routes.ts';
import { Hidden, PostForm, Table } from './parts.tsx';
import { money, when } from './views.ts';

/** One rule in plain words. */
export function describeRule(r: Rule): { target: string; conditions: string } {
  const target = `${!r.partner || r.partner === '*' ? 'every partner' : r.partner}, ${!r.method || r.method === '*' ? 'every method' : r.method}`;
  const parts: string[] = [];
  if (r.enabled === false) parts.push('never offered');
  if (r.currencies) parts.push(`currency ${r.currencies.join(' or ')}`);
  for (const [currency, b] of Object.entries(r.amounts ?? {})) {
    if (!b) continue;
    if (b.min_amount !== undefined && b.max_amount !== undefined) parts.push(`${currency} amounts from ${money(b.min_amount, currency)} to ${money(b.max_amount, currency)}`);
    else if (b.min_amount !== undefined) parts.push(`${currency} amounts from ${money(b.min_amount, currency)}`);
    else if (b.max_amount !== undefined) parts.push(`${currency} amounts up to ${money(b.max_amount, currency)}`);
  }
  for (const [what, lists] of [['billing country', r.billing_countries], ['shipping countries', r.shipping_countries]] as const) {
    if (lists?.allow) parts.push(`${what} in ${lists.allow.join(', ')}`);
    if (lists?.deny) parts.push(`${what} not in ${lists.deny.join(', ')}`);
  }
  if (r.marketplace === true) parts.push('marketplace orders only');
  if (r.marketplace === false) parts.push('not on marketplace orders');
  if (r.customer_types) parts.push(`customers of type ${r.customer_types.join(' or ')}`);
  return { target, conditions: parts.join('; ') || 'no condition' };
}

export interface RulesProps {
  m: Member;
  set: { version: number; updated_at?: Date | string | null | undefined; rules: Rule[] };
  message?: { notice?: string; errors?: string[] } | undefined;
  /** The JSON as posted (a refused save keeps it in the editor). */
  draft?: string | undefined;
}

export function RulesBody({ m, set, message, draft }: RulesProps): VNode {
  const rows = set.rules.map((r, i) => {
    const d = describeRule(r);
    return <tr><td>{i + 1}</td><td>{d.target}</td><td>{d.conditions}</td><td>{r.description ?? ''}</td></tr>;
  });
  return (
    <>
      {message?.notice ? <p class="notice" role="status">{message.notice}</p> : null}
      {message?.errors?.length ? <div class="error" role="alert"><p>Nothing was saved:</p><ul>{message.errors.map((x) => <li>{x}</li>)}</ul></div> : null}
      <p>Rules restrict which payment solutions shoppers are offered (eligible solutions, client sessions, payment links): a solution is offered when its partner's own limits allow the order and every rule that targets it holds. Without rules, every solution is offered within its partner's limits.</p>
      <p>Version {set.version}{set.updated_at ? `, changed ${when(set.updated_at, m.entity.time_zone)}` : ' (never changed)'}.</p>
      <Table label="Rules" cols={['#', 'Applies to', 'Offered only when', 'Description']} rows={rows} empty="No rule: every solution is offered within its partner's limits." />
      <h2>Edit</h2>
      <PostForm action={`/dashboard/${m.entity.entity_id}/eligibility`} csrf={m.csrf}>
        <Hidden name="version" value={String(set.version)} />
        <label for="rules-json">Rules (JSON: a list of rules, as the operator API takes them; [] for none)</label>
        <textarea id="rules-json" name="rules" rows={14} spellcheck={false} class="code">{draft ?? JSON.stringify(set.rules, null, 2)}</textarea>
        <p class="hint">Fields of a rule: partner, method ("*" or absent: any), enabled, currencies, amounts ({'{"EUR": {"min_amount": 2000, "max_amount": 100000}}'}, minor units), billing_countries and shipping_countries ({'{"allow": [...]} or {"deny": [...]}'}), marketplace, customer_types, description. See docs/eligibility.md.</p>
        <button type="submit">Save the rules</button>
      </PostForm>
    </>
  );
}
