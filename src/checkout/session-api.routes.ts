// The checkout's browser API under /checkout/v1/: the widget reads its session and submits
// the payment, authenticated by the session credential in x-payd-session (never a merchant
// key, never a cookie: CORS is open, checkout.routes.ts). Its refusals are said in the
// shopper's language (shopper-problems.ts).
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { problemResponses } from '../platform/http/schemas.ts';
import { SplitPart } from '../payments/payments.schemas.ts';
import { languageChoice } from '../web/index.ts';
import type { CheckoutService, SubmitBody } from './checkout.service.ts';
import { LangQuery, SessionInfo, SubmitResult } from './checkout.schemas.ts';
import { localizeProblemBody, shopperWordsOf } from './shopper-problems.ts';

export const SESSION_HEADER = 'x-payd-session';
const tags = ['Checkout (browser)'];
const security = [{ sessionCredential: [] }];

const credential = (headers: Record<string, unknown>) => {
  const v = headers[SESSION_HEADER];
  return typeof v === 'string' ? v : undefined;
};

export async function sessionApiRoutes(root: FastifyInstance, { checkout }: { checkout: CheckoutService }) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();

  // payd's answers to the shopper's browser are in the shopper's language (shopper-problems.ts).
  const failures = new WeakMap<object, unknown>();
  app.addHook('onError', async (request, _reply, error) => void failures.set(request, error));
  app.addHook('onSend', async (request, reply, payload) => {
    if (!request.url.startsWith('/checkout/v1/') || reply.statusCode < 400 || typeof payload !== 'string'
      || !String(reply.getHeader('content-type') ?? '').startsWith('application/problem+json')) return payload;
    const locale = await checkout.localeFor(credential(request.headers), languageChoice(request));
    reply.header('content-language', locale);
    if (locale === 'en') return payload;
    try {
      return JSON.stringify(localizeProblemBody(JSON.parse(payload) as Record<string, unknown>, locale, shopperWordsOf(failures.get(request))));
    } catch {
      return payload;
    }
  });

  app.options('/checkout/v1/*', { schema: { hide: true } }, async (_request, reply) =>
    reply.code(204)
      .header('access-control-allow-methods', 'GET, POST')
      .header('access-control-allow-headers', `content-type, ${SESSION_HEADER}`)
      .header('access-control-max-age', '600')
      .send());

  app.get('/checkout/v1/session', {
    schema: {
      tags, security, summary: 'The client session as the widget sees it',
      description: `Authenticated by the session's widget.data in the \`${SESSION_HEADER}\` header (never a merchant key).`,
      querystring: LangQuery,
      response: { 200: SessionInfo, ...problemResponses(401) },
    },
  }, async (request, reply) => {
    // The session changes as the shopper pays: a browser going Back must ask again, not show a payable form it kept.
    reply.header('cache-control', 'no-store');
    const info = await checkout.describe(credential(request.headers), languageChoice(request));
    reply.header('content-language', info.locale);
    return info;
  });

  app.post('/checkout/v1/session/payments', {
    schema: {
      tags, security, summary: 'Pay the client session (the widget submits)',
      description: 'Moves the session to SUBMITTED and creates a payment attempt with the session\'s amount, currency and order. ' +
        'Each split part must be one of the solutions the session offers. A refused or failed attempt leaves the session payable ' +
        '(can_retry) up to PAYD_SESSION_MAX_ATTEMPTS attempts; a submit while an attempt is in flight or authorized, or with ' +
        'no attempts left, answers 400 (409 for a concurrent submit of the same attempt). A part\'s save_token is refused (400): the ' +
        'session\'s allow_future_usage decides what is kept on file, and a payment carrying a customer_email keeps no card.',
      body: Type.Object({
        split: Type.Array(SplitPart, { minItems: 1, maxItems: 2 }),
        browser: Type.Optional(Type.Ref('Browser')),
        customer_email: Type.Optional(Type.String({
          format: 'email', maxLength: 254,
          description: 'The shopper\'s email, when a solution of the split requires customer_email (the session has none): used for this payment only. Refused when the session has a customer email, or when no solution of the split requires it.',
        })),
      }, { additionalProperties: false }),
      querystring: LangQuery,
      response: { 200: SubmitResult, ...problemResponses(400, 401, 409, 413, 415) },
    },
  }, async (request) => checkout.submit(credential(request.headers), request.body as SubmitBody));
}
