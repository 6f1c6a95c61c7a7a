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
import { PutRulesBody, type Rule } from '../eligibility/eligibility.schemas.ts';
import type { EligibilityRulesService } from '../eligibility/rules.service.ts';
import type { ExtraDeps, Member } from './links-keys.routes.ts';
import { actionBy } from './access.tsx';
import { EntityParams } from './params.ts';
import { formExpired, layoutOf } from './parts.tsx';
import { RulesBody } from './eligibility-page.tsx';
import { page } from './views.ts';

const MAX_JSON = 64 * 1024;

export interface EligibilityPageDeps extends Pick<ExtraDeps, 'member' | 'csrfOk' | 'dashboard'> {
  rules: EligibilityRulesService;
}

export async function eligibilityPageRoutes(app: FastifyInstance, deps: EligibilityPageDeps) {
  const form = Type.Record(Type.String(), Type.String({ maxLength: MAX_JSON }));

  const rulesPage = async (reply: FastifyReply, m: Member, status = 200, message?: { notice?: string; errors?: string[] }, draft?: string) =>
    page(reply, status, layoutOf(m, 'Eligibility rules', 'eligibility'), RulesBody({ m, set: await deps.rules.get(m.entity.entity_id), message, draft }));

  app.get('/dashboard/:entity/eligibility', { schema: { hide: true, params: EntityParams } }, async (request, reply) => {
    const m = await deps.member(request, reply, 'admin');
    if (!m) return reply;
    return rulesPage(reply, m, 200, (request.query as Record<string, unknown>).saved === '1' ? { notice: 'The rules are saved: they apply to every answer from now on.' } : undefined);
  });

  app.post('/dashboard/:entity/eligibility', { schema: { hide: true, params: EntityParams, body: form } }, async (request, reply) => {
    const m = await deps.member(request, reply, 'admin');
    if (!m) return reply;
    if (!deps.csrfOk(request, m)) return formExpired(reply, m, 'eligibility');
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
    await deps.dashboard.recordPlain(actionBy(m), 'Replace eligibility rules');
    return reply.redirect(`/dashboard/${m.entity.entity_id}/eligibility?saved=1`, 303);
  });
}
