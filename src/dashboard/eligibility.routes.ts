// The dashboard's eligibility rules page (admins): the entity's rule set in plain words,
// and an editor of the set as JSON, the shape of PUT /admin/v1/entities/{id}/eligibility-
// rules (docs/eligibility.md). A save is checked like the operator API's (the Rule schema,
// then the same validateRules: each error names its field) and is refused with 409 when
// someone replaced the set since the form was shown (the form carries that version), so
// nobody overwrites a change they have not seen.
import type { FastifyInstance, FastifyReply } from 'fastify';
import { Type } from 'typebox';
import { Value } from 'typebox/value';
import { Problem } from '../platform/http/problem.ts';
import { escapeHtml as e } from '../checkout/pages.ts';
import { PutRulesBody, type Rule } from '../eligibility/eligibility.schemas.ts';
import type { EligibilityRulesService } from '../eligibility/rules.service.ts';
import { membersRepo } from './members.ts';
import type { ExtraDeps, Member } from './links-keys.routes.ts';
import { money, page, when } from './views.ts';
import type { Db } from '../platform/db/index.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MAX_JSON = 64 * 1024;

export interface EligibilityPageDeps extends Pick<ExtraDeps, 'member' | 'csrfOk'> {
  db: Db;
  rules: EligibilityRulesService;
}

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

export async function eligibilityPageRoutes(app: FastifyInstance, deps: EligibilityPageDeps) {
  const params = Type.Object({ entity: Type.String({ pattern: UUID.source }) });
  const form = Type.Record(Type.String(), Type.String({ maxLength: MAX_JSON }));
  const layout = (m: Member, title: string) => ({ title, email: m.email, csrf: m.csrf, memberships: m.memberships, entity: m.entity, current: 'eligibility' as const });

  const rulesPage = async (reply: FastifyReply, m: Member, status = 200, message?: { notice?: string; errors?: string[] }, draft?: string) => {
    const set = await deps.rules.get(m.entity.entity_id);
    const rows = set.rules.map((r, i) => {
      const d = describeRule(r);
      return `<tr><td>${i + 1}</td><td>${e(d.target)}</td><td>${e(d.conditions)}</td><td>${e(r.description ?? '')}</td></tr>`;
    }).join('');
    const base = `/dashboard/${m.entity.entity_id}/eligibility`;
    return page(reply, status, layout(m, 'Eligibility rules'), `
${message?.notice ? `<p class="notice" role="status">${e(message.notice)}</p>` : ''}${message?.errors?.length ? `<div class="error" role="alert"><p>Nothing was saved:</p><ul>${message.errors.map((x) => `<li>${e(x)}</li>`).join('')}</ul></div>` : ''}
<p>Rules restrict which payment solutions shoppers are offered (eligible solutions, client sessions, payment links): a solution is offered when its partner's own limits allow the order and every rule that targets it holds. Without rules, every solution is offered within its partner's limits.</p>
<p>Version ${set.version}${set.updated_at ? `, changed ${e(when(set.updated_at, m.entity.time_zone))}` : ' (never changed)'}.</p>
<div class="table-wrap" role="region" tabindex="0" aria-label="Rules (scrolls sideways on small screens)"><table aria-label="Rules">
<thead><tr><th scope="col">#</th><th scope="col">Applies to</th><th scope="col">Offered only when</th><th scope="col">Description</th></tr></thead>
<tbody>${rows || '<tr><td colspan="4">No rule: every solution is offered within its partner\'s limits.</td></tr>'}</tbody></table></div>
<h2>Edit</h2>
<form method="post" action="${base}" data-once>
<input type="hidden" name="csrf" value="${e(m.csrf)}"><input type="hidden" name="version" value="${set.version}">
<label for="rules-json">Rules (JSON: a list of rules, as the operator API takes them; [] for none)</label>
<textarea id="rules-json" name="rules" rows="14" spellcheck="false" class="code">${e(draft ?? JSON.stringify(set.rules, null, 2))}</textarea>
<p class="hint">Fields of a rule: partner, method ("*" or absent: any), enabled, currencies, amounts ({"EUR": {"min_amount": 2000, "max_amount": 100000}}, minor units), billing_countries and shipping_countries ({"allow": [...]} or {"deny": [...]}), marketplace, customer_types, description. See docs/eligibility.md.</p>
<button type="submit">Save the rules</button>
</form>`);
  };

  app.get('/dashboard/:entity/eligibility', { schema: { hide: true, params } }, async (request, reply) => {
    const m = await deps.member(request, reply, 'admin');
    if (!m) return reply;
    return rulesPage(reply, m, 200, (request.query as Record<string, unknown>).saved === '1' ? { notice: 'The rules are saved: they apply to every answer from now on.' } : undefined);
  });

  app.post('/dashboard/:entity/eligibility', { schema: { hide: true, params, body: form } }, async (request, reply) => {
    const m = await deps.member(request, reply, 'admin');
    if (!m) return reply;
    if (!deps.csrfOk(request, m)) return page(reply, 403, layout(m, 'Form expired'), '<p role="alert">The form expired or did not come from this dashboard. Reload the page and try again.</p>');
    const b = request.body as Record<string, string>;
    const draft = b.rules ?? '';
    const version = Number(b.version);
    if (!Number.isInteger(version) || version < 0) return rulesPage(reply, m, 400, { errors: ['The form is incomplete: reload the page.'] }, draft);
    let parsed: unknown;
    try {
      parsed = JSON.parse(draft);
    } catch (err) {
      return rulesPage(reply, m, 400, { errors: [`The rules are not JSON: ${(err as Error).message}`] }, draft);
    }
    const body = { rules: parsed };
    if (!Value.Check(PutRulesBody, body)) {
      const errors = [...Value.Errors(PutRulesBody, body)].slice(0, 10)
        .map((x) => `${x.instancePath.replace(/^\/rules/, 'rules').replace(/\/(\d+)/g, '[$1]').replace(/\//g, '.') || 'rules'} ${x.message}`);
      return rulesPage(reply, m, 400, { errors }, draft);
    }
    try {
      await deps.rules.put(m.entity.entity_id, (parsed as Rule[]), version);
    } catch (err) {
      if (err instanceof Problem && err.status < 500) {
        const params = (err.extra.invalid_params as Array<{ name: string; reason: string }> | undefined)?.map((p) => `${p.name} ${p.reason}`);
        return rulesPage(reply, m, err.status, { errors: params?.length ? params : [err.detail ?? err.title] }, draft);
      }
      throw err;
    }
    await membersRepo.recordAction(deps.db, { entity_id: m.entity.entity_id, user_id: m.userId, user_email: m.email, action: 'Replace eligibility rules', payment_id: null, idempotency_key: null, amount: null });
    return reply.redirect(`/dashboard/${m.entity.entity_id}/eligibility?saved=1`, 303);
  });
}
