// Shopper-facing HTTP: widget.js and its API (session credential in x-payd-session,
// CORS open because no cookie is involved), the hosted page, the return to the merchant
// with service-redirection-data, and the simulated acquirer's 3-D Secure page.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { problemResponses, StringEnum, Timestamp, Uuid } from '../platform/http/schemas.ts';
import { SplitPart } from '../payments/payments.schemas.ts';
import type { CheckoutService, SubmitBody } from './checkout.service.ts';
import { CARD_FRAME_CSS, CHECKOUT_CSS, WIDGET_CSS, cardFramePage, escapeHtml, fragmentCheckoutPage } from './pages.ts';
import { type BrowserScript, browserBundle } from './widget-bundle.ts';
import { THREE_DS_DONE } from './widget/frame-protocol.ts';
import { formatAmount } from './widget/validation.ts';
import { type Locale, LOCALES, intlLocale, t } from './i18n.ts';
import { LANG_PARAM, languageChoice, pageLanguage, shopperPage, tHtml } from './language.ts';
import { localizeProblemBody, shopperWordsOf } from './shopper-problems.ts';
import { DECLINE_REASONS } from './decline-reasons.ts';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const SESSION_HEADER = 'x-payd-session';
const tags = ['Checkout (browser)'];
const security = [{ sessionCredential: [] }];

const SessionInfo = Type.Object({
  client_session_id: Uuid(),
  status: Type.String(),
  locale: StringEnum(LOCALES, { description: 'Language of the widget: the shopper\'s explicit choice (the lang parameter, or on payd\'s own pages the payd_lang cookie), else the session customer\'s locale when supported, else the browser\'s Accept-Language, else en' }),
  merchant: Type.Object({ name: Type.String({ description: 'The entity\'s display name' }) }),
  order: Type.Object({
    reference: Type.Optional(Type.String()),
    items: Type.Array(Type.Object({ name: Type.String(), quantity: Type.Integer() }), { description: 'Item lines of the order\'s shipments (at most 20; shipping fees left out)' }),
  }),
  amount: Type.Integer(),
  currency: Type.String(),
  expires_at: Timestamp(),
  eligible_solutions: Type.Array(Type.Object({
    partner: Type.String(),
    method: Type.String(),
    requires: Type.Optional(Type.Array(Type.Literal('customer_email'), {
      description: 'What the shopper must give with the submit for this solution (the session lacks it): customer_email',
    })),
  }), {
    description: 'The solutions the shopper is offered: those of the session that can succeed with what it holds, or with what the widget asks the shopper (requires)',
  }),
  saved_cards: Type.Array(Type.Object({
    id: Uuid(),
    partner: Type.String(),
    selected_network: Type.String(),
    last_four_digits: Type.String(),
    expiry_month: Type.String(),
    expiry_year: Type.String(),
  }), { description: "The session customer's saved cards the shopper may pay with (its CVC typed in the card frame): kept by a partner offered for CARD, not expired" }),
  can_pay: Type.Boolean({ description: 'Whether the session takes a payment attempt now (CREATED, or its last attempt was refused or failed and attempts are left)' }),
  attempts_left: Type.Integer({ minimum: 0 }),
  last_attempt_status: Type.Optional(Type.String({ description: 'Authorization status of the latest attempt' })),
  payment: Type.Optional(Type.Object({ id: Uuid(), authorization_status: Type.String() })),
  return_url: Type.String({ description: 'Where the shopper goes back to the merchant (payd adds service-redirection-data)' }),
});

const LangQuery = Type.Object({
  [LANG_PARAM]: Type.Optional(Type.String({ maxLength: 35, description: 'The shopper\'s explicit choice of language (a language tag; one payd does not speak is ignored): the widget\'s locale and the language of problem details. Without it, on payd\'s own pages, the payd_lang cookie' })),
});

const SubmitResult = Type.Object({
  payment_id: Uuid(),
  authorization_status: Type.String({ description: 'AUTHORIZED, REFUSED, ERROR, or PENDING with a redirection (3-D Secure)' }),
  can_retry: Type.Boolean({ description: 'The attempt was refused or failed and the shopper may try another card or method' }),
  attempts_left: Type.Integer({ minimum: 0 }),
  redirection: Type.Optional(Type.Object({ url: Type.String(), method: Type.String() })),
  decline_reason: Type.Optional(StringEnum(DECLINE_REASONS, {
    description: 'A refused attempt the shopper can act on: an expired card, a wrong security code, insufficient funds. Absent for every other decline (fraud and issuer declines are not named).',
  })),
  return_url: Type.String(),
});

interface Deps {
  checkout: CheckoutService;
}

export async function checkoutRoutes(root: FastifyInstance, { checkout }: Deps) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();

  app.addHook('onSend', async (request, reply) => {
    if (request.url.startsWith('/checkout/v1/') || request.url.startsWith('/checkout/widget.js')) {
      reply.header('access-control-allow-origin', '*');
      reply.header('vary', 'origin');
    }
  });

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

  const script = (name: BrowserScript) => async (request: { headers: Record<string, unknown> }, reply: FastifyReply) => {
    const { code, etag } = await browserBundle(name);
    reply.header('etag', etag).header('cache-control', 'public, max-age=300').header('cross-origin-resource-policy', 'cross-origin');
    if (request.headers['if-none-match'] === etag) return reply.code(304).send();
    return reply.type('application/javascript; charset=utf-8').send(code);
  };
  app.get('/checkout/widget.js', { schema: { hide: true } }, script('widget'));

  // The card frame: payd's page holding the card fields, which the widget embeds (any page
  // may, as Stripe Elements), and its script and style (same origin as the frame).
  // ?s= the session id (not its credential), read from the credential by the widget: who
  // may embed the frame follows the session's merchant; the frame accepts only that
  // session's credential (card-frame.ts), so leaving it out gains nothing.
  app.get('/checkout/card-frame', { schema: { hide: true, querystring: Type.Object({ s: Type.Optional(Type.String({ maxLength: 100 })) }) } }, async (request, reply) =>
    cardFramePage(reply, await checkout.frameAncestors(UUID_RE.test(request.query.s ?? '') ? request.query.s : undefined)));
  app.get('/checkout/card-frame.js', { schema: { hide: true } }, script('card-frame'));
  app.get('/checkout/card-frame.css', { schema: { hide: true } }, async (_request, reply) =>
    reply.type('text/css; charset=utf-8').header('cache-control', 'public, max-age=300').send(CARD_FRAME_CSS));
  // The 3-D Secure return page, in the widget's modal frame, tells the widget the challenge is over (and nothing else).
  app.get('/checkout/3ds-done.js', { schema: { hide: true } }, async (_request, reply) =>
    reply.type('application/javascript; charset=utf-8').header('cache-control', 'public, max-age=300')
      .send(`(function () {
  var next = document.currentScript && document.currentScript.getAttribute('data-next');
  if (window.parent !== window) window.parent.postMessage({ type: ${JSON.stringify(THREE_DS_DONE)} }, '*');
  else if (next && /^https?:/.test(next)) window.location.replace(next);
})();
`));

  app.get('/checkout/checkout.css', { schema: { hide: true } }, async (_request, reply) =>
    reply.type('text/css; charset=utf-8').header('cache-control', 'public, max-age=300').send(CHECKOUT_CSS));

  app.get('/checkout/widget.css', { schema: { hide: true } }, async (_request, reply) =>
    reply.type('text/css; charset=utf-8').header('cache-control', 'public, max-age=300')
      .header('access-control-allow-origin', '*').header('cross-origin-resource-policy', 'cross-origin').send(WIDGET_CSS));

  app.options('/checkout/v1/*', { schema: { hide: true } }, async (_request, reply) =>
    reply.code(204)
      .header('access-control-allow-methods', 'GET, POST')
      .header('access-control-allow-headers', `content-type, ${SESSION_HEADER}`)
      .header('access-control-max-age', '600')
      .send());

  const credential = (headers: Record<string, unknown>) => {
    const v = headers[SESSION_HEADER];
    return typeof v === 'string' ? v : undefined;
  };

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
        'no attempts left, answers 400 (409 for a concurrent submit of the same attempt).',
      body: Type.Object({
        split: Type.Array(SplitPart, { minItems: 1, maxItems: 2 }),
        browser: Type.Optional(Type.Ref('Browser')),
        customer_email: Type.Optional(Type.String({
          format: 'email', maxLength: 254,
          description: 'The shopper\'s email, when a solution of the split requires customer_email (the session has none): used for this payment only. Refused when the session has a customer email.',
        })),
      }, { additionalProperties: false }),
      querystring: LangQuery,
      response: { 200: SubmitResult, ...problemResponses(400, 401, 409, 413, 415) },
    },
  }, async (request) => checkout.submit(credential(request.headers), request.body as SubmitBody));

  // The hosted page (links.hosted_page): /checkout/pay#session={widget.data}. The
  // credential is in the fragment, which browsers never send (no request line, log,
  // proxy or Referer sees it); the page's script reads it and sends it in x-payd-session.
  // Addresses of the old form (?session=, handed out before) are moved to the fragment
  // by a redirect (the logged URL has the value redacted).
  app.get('/checkout/pay', {
    schema: { hide: true, querystring: Type.Object({ session: Type.Optional(Type.String({ maxLength: 300 })), [LANG_PARAM]: Type.Optional(Type.String({ maxLength: 35 })) }) },
  }, async (request, reply) => {
    if (request.query.session !== undefined) {
      const lang = request.query[LANG_PARAM] ? `?${LANG_PARAM}=${encodeURIComponent(request.query[LANG_PARAM])}` : '';
      return reply.code(303).header('cache-control', 'no-store').header('referrer-policy', 'no-referrer')
        .redirect(`/checkout/pay${lang}#session=${encodeURIComponent(request.query.session)}`, 303);
    }
    // The session is unknown here (its credential is in the fragment): the shopper's choice
    // or the browser's language; the widget says the heading again in the session's.
    const lang = pageLanguage(request, reply);
    return fragmentCheckoutPage(reply, t(lang.locale, 'securePayment'), t(lang.locale, 'securePaymentIntro'), lang);
  });

  // The outcome pages need the MAC of their address (return-links.ts): an id alone opens nothing.
  const returnQuery = Type.Object({ t: Type.Optional(Type.String({ maxLength: 100 })) });
  const notHere = (request: FastifyRequest, reply: FastifyReply, key: 'paymentNotFoundText' | 'paymentMissingText' = 'paymentNotFoundText') => {
    const lang = pageLanguage(request, reply);
    return shopperPage(reply, lang, 404, t(lang.locale, 'paymentNotFound'), `<p>${tHtml(lang.locale, key)}</p>`);
  };
  app.get('/checkout/return/:id', { schema: { hide: true, params: Type.Object({ id: Uuid() }), querystring: returnQuery } }, async (request, reply) => {
    reply.header('cache-control', 'no-store').header('referrer-policy', 'no-referrer');
    if (!checkout.returnOk('return', request.params.id, request.query.t)) return notHere(request, reply);
    const done = await checkout.finish(request.params.id).catch(() => undefined);
    if (!done) return notHere(request, reply, 'paymentMissingText');
    if (done.url) return reply.code(303).header('cache-control', 'no-store').redirect(done.url, 303);
    const lang = pageLanguage(request, reply, done.session.customer?.locale);
    const L = lang.locale;
    const page = (title: string, body: string) => shopperPage(reply, lang, 200, title, body);
    if (done.authorizationStatus === 'AUTHORIZED') {
      const r = await checkout.receipt(done.session);
      return page(t(L, 'accepted'), `<p role="status">${t(L, 'acceptedText')}</p>${r ? receiptHtml(L, r) : ''}<p class="muted">${t(L, 'mayClose')}</p>`);
    }
    if (done.authorizationStatus === 'PENDING') return page(t(L, 'beingConfirmed'), `<p role="status">${t(L, 'beingConfirmedText')}</p>`);
    const retry = await checkout.retryUrl(done.session);
    return page(t(L, 'notCompleted'),
      `<p role="status">${t(L, done.authorizationStatus ? 'notCompletedText' : 'noPayment')}</p>${retry ? `<p><a href="${escapeHtml(retry)}" id="payd-retry">${t(L, 'tryAgain')}</a></p>` : ''}`);
  });

  app.get('/checkout/3ds-return/:paymentId', { schema: { hide: true, params: Type.Object({ paymentId: Uuid() }), querystring: returnQuery } }, async (request, reply) => {
    reply.header('cache-control', 'no-store').header('referrer-policy', 'no-referrer');
    if (!checkout.returnOk('3ds', request.params.paymentId, request.query.t)) return notHere(request, reply);
    const done = await checkout.afterChallenge(request.params.paymentId);
    // The widget's 3-D Secure modal: the page in the frame tells the widget the challenge is
    // over (3ds-done.js; the widget then asks payd the outcome and stays on the merchant's
    // page). Browsers say where a page goes (Sec-Fetch-Dest: iframe or document); where
    // they do not (older browsers, or plain http to a host that is not localhost), an
    // embedded session's page decides in the browser: in a frame it tells the widget, at
    // the top it goes on to the return address (also a link, for a browser without script).
    const dest = request.headers['sec-fetch-dest'];
    if (done.sessionId && (dest === 'iframe' || (dest === undefined && await checkout.isEmbedded(done.sessionId)))) {
      const lang = pageLanguage(request, reply, await checkout.customerLocale(done.sessionId));
      const L = lang.locale;
      const next = checkout.returnUrl(done.sessionId);
      return shopperPage(reply, lang, 200, t(L, 'threeDsTitle'), `<p role="status">${tHtml(L, 'checking')}</p><p><a href="${escapeHtml(next)}" id="payd-continue">${tHtml(L, 'continue')}</a></p>`,
        { scripts: [`<script src="/checkout/3ds-done.js" data-next="${escapeHtml(next)}"></script>`], framing: { frameAncestors: await checkout.frameAncestors(done.sessionId) } });
    }
    if (done.retryUrl) return reply.code(303).redirect(done.retryUrl, 303);
    if (done.sessionId) return reply.redirect(checkout.returnUrl(done.sessionId), 303);
    const lang = pageLanguage(request, reply);
    const key = done.authorizationStatus === 'AUTHORIZED' ? 'cardConfirmed' : done.authorizationStatus === undefined ? 'noPaymentHere' : 'cardNotConfirmed';
    return shopperPage(reply, lang, 200, t(lang.locale, 'authFinished'), `<p role="status">${tHtml(lang.locale, key)}</p>`);
  });
}

/** The receipt of an authorized payment on payd's own outcome page. */
function receiptHtml(L: Locale, r: NonNullable<Awaited<ReturnType<CheckoutService['receipt']>>>): string {
  const date = new Intl.DateTimeFormat(intlLocale(L), { dateStyle: 'long', timeStyle: 'short', timeZone: 'UTC' }).format(r.date) + ' UTC';
  const rows: Array<[string, string]> = [
    [t(L, 'paidTo'), r.merchant],
    [t(L, 'amount'), formatAmount(r.amount, r.currency, intlLocale(L))],
    ...(r.order.reference ? [[t(L, 'orderLabel'), r.order.reference] as [string, string]] : []),
    [t(L, 'date'), date],
    ...(r.cards.length ? [[t(L, 'paidWith'), r.cards.join(', ')] as [string, string]] : []),
    [t(L, 'reference'), r.payment_id],
  ];
  const items = r.order.items.length
    ? `<ul class="payd-items">${r.order.items.map((i) => `<li>${escapeHtml(i.name)}${i.quantity > 1 ? ` × ${i.quantity}` : ''}</li>`).join('')}</ul>` : '';
  return `<section class="card-box" aria-label="${t(L, 'receipt')}"><h2>${t(L, 'receipt')}</h2><dl class="payd-receipt">${rows.map(([k, v]) => `<dt>${escapeHtml(k)}</dt><dd>${escapeHtml(v)}</dd>`).join('')}</dl>${items}</section>`;
}
