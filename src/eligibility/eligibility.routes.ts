// HTTP wiring of eligibility: POST /v2/eligible-solutions for merchants, and the
// operator's GET/PUT of an entity's rule set.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { entityOf } from '../platform/http/auth.ts';
import { problems } from '../platform/http/problem.ts';
import { problemResponses } from '../platform/http/schemas.ts';
import type { EligibilityEngine } from './engine.ts';
import type { EligibilityRulesService } from './rules.service.ts';
import { EligibleSolutions, EligibleSolutionsBody, PutRulesBody, type Rule, RuleSet } from './eligibility.schemas.ts';

export interface EligibilityDeps {
  engine: EligibilityEngine;
  rules: EligibilityRulesService;
}

const EntityParams = Type.Object({ id: Type.String({ format: 'uuid' }) });
const operator = { config: { auth: { schemes: ['admin' as const] } }, tags: ['Operator'], security: [{ operatorToken: [] }] };

const SOLUTIONS_DESCRIPTION =
  'The partner/method pairs that can pay this order for this customer: each partner\'s own limits (currencies, ' +
  'amount bounds) and the entity\'s eligibility rules (set by the operator: PUT /admin/v1/entities/{id}/eligibility-rules). ' +
  'The spec\'s body is "an order plus a customer": both are optional, and so are amount and currency, which refine the ' +
  'answer. amount defaults to order.net_amount + order.tax_amount; without an amount, amount bounds do not filter; ' +
  'without a currency, neither currencies nor amount bounds filter (as Adyen\'s payment methods without an amount). ' +
  'Rules on billing or shipping countries with an allow list, and on customer types, do not hold without the order or ' +
  'customer fields they look at. The answer is the same ' +
  'array a client session carries in eligible_solutions, in a stable order: partners (card-sim, gift-sim, bnpl-sim) ' +
  'then each partner\'s methods. Nothing is stored.';

const RULES_DESCRIPTION =
  'Rules only restrict: a partner/method pair is eligible when the partner\'s own limits allow the order and every ' +
  'rule that targets the pair holds (a rule targets pairs by partner and method, absent or * for any). Within a rule ' +
  'every condition present must hold. An entity without rules gets every pair its partners\' limits allow. ' +
  'See docs/eligibility.md.';

/** The order's own total, net_amount + tax_amount, when it has a net_amount. */
function orderAmount(order: unknown): number | undefined {
  const o = order as { net_amount?: number; tax_amount?: number } | undefined; // validated as an Order
  return o?.net_amount === undefined ? undefined : o.net_amount + (o.tax_amount ?? 0);
}

export async function eligibilityRoutes(root: FastifyInstance, { engine, rules }: EligibilityDeps) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();

  app.post('/v2/eligible-solutions', {
    config: { auth: { schemes: ['bearer' as const], scope: 'payment-api' } },
    schema: {
      tags: ['Eligible solutions'], security: [{ bearerAuth: [] }],
      summary: 'List the payment solutions eligible for an order and customer',
      description: SOLUTIONS_DESCRIPTION,
      body: EligibleSolutionsBody,
      response: { 200: EligibleSolutions, ...problemResponses(400, 401, 403, 413, 415) },
    },
  }, async (request) => {
    const entityId = entityOf(request);
    const body = request.body;
    if (body.entity_id && body.entity_id !== entityId) throw problems.forbidden('entity_id does not match the entity of the credentials.');
    const solutions = await engine.solutions(entityId, { amount: body.amount ?? orderAmount(body.order), currency: body.currency, order: body.order, customer: body.customer });
    return { eligible_solutions: solutions };
  });

  app.get('/admin/v1/entities/:id/eligibility-rules', {
    config: operator.config,
    schema: {
      tags: operator.tags, security: operator.security,
      summary: 'Get the eligibility rules of an entity',
      description: `${RULES_DESCRIPTION} An entity that never had rules answers version 0 and rules [].`,
      params: EntityParams,
      response: { 200: RuleSet, ...problemResponses(400, 401, 404) },
    },
  }, async (request) => rules.get(request.params.id));

  app.put('/admin/v1/entities/:id/eligibility-rules', {
    config: operator.config,
    schema: {
      tags: operator.tags, security: operator.security,
      summary: 'Replace the eligibility rules of an entity',
      description: `${RULES_DESCRIPTION} The body replaces the whole rule set ([] restores the defaults); it applies to ` +
        'every eligibility answer and client session created from then on, in every payd process. An invalid set is ' +
        'refused with 400 naming each field (unknown partner or method, min_amount above max_amount, a country both ' +
        'allowed and denied, ...) and changes nothing.',
      params: EntityParams,
      body: PutRulesBody,
      response: { 200: RuleSet, ...problemResponses(400, 401, 404, 413, 415) },
    },
  }, async (request) => rules.put(request.params.id, request.body.rules as Rule[]));
}
