// The merchant dashboard at /dashboard (roles api and all): server-rendered pages for the
// people who run a shop's payments (docs/dashboard.md). Users sign in through payd's own
// identity provider (authorization code + PKCE, the built-in first-party application
// payd-dashboard, as the console does); the dashboard's cookie is signed and lives only
// as long as the provider's sign-in session it came from. Every page is authorised here
// by the user's membership of the entity in its URL (not a member: 404), every form
// carries a CSRF token bound to the cookie, and every action that moves money goes
// through the same services as the API, after a confirmation step, with an idempotency
// key made when the form was shown: a double click or a reload moves money once.
import { AUTHORIZATION_STATUSES } from '../payments/common.schemas.ts';
import { createHash, createHmac, randomBytes, randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { safeEqual } from '../platform/crypto/secrets.ts';
import { decodeJwt } from '../platform/crypto/compact-jws.ts';
import type { Db } from '../platform/db/index.ts';
import type { ReadRouter } from '../platform/db/reads.ts';
import { isProblem, Problem, PROBLEM_TYPE } from '../platform/http/problem.ts';
import { StringEnum } from '../platform/http/schemas.ts';
import { escapeHtml as e } from '../checkout/pages.ts';
import { idpRepo } from '../identity/idp/idp.repo.ts';
import type { IdentityService } from '../identity/idp/idp.service.ts';
import type { PaymentsService, PaymentViewT } from '../payments/payments.service.ts';
import type { OperationsService } from '../payments/operations.service.ts';
import type { OperationKind } from '../payments/payments.repo.ts';
import { pageOf, pageRequest, paymentListFilter, type PaymentListQueryT } from '../payments/lists.routes.ts';
import type { PageRequest } from '../payments/lists.repo.ts';
import { type Membership, type Role, can, membersRepo } from './members.ts';
import type { PaymentLinksService } from '../links/links.service.ts';
import type { EntitiesService } from '../admin/entities.service.ts';
import { linkAndKeyRoutes } from './links-keys.routes.ts';
import { webhookPageRoutes } from './webhooks.routes.ts';
import { teamPageRoutes } from './members-page.routes.ts';
import { eligibilityPageRoutes } from './eligibility.routes.ts';
import { requestLogPageRoutes } from './requests.routes.ts';
import type { EligibilityRulesService } from '../eligibility/rules.service.ts';
import type { Mailer } from '../identity/sdk/mail.ts';
import type { WebhooksService } from '../webhooks/webhooks.service.ts';
import { ASSETS, DASHBOARD_CSS, DASHBOARD_JS, addDays, barChart, dayIn, dayStart, localSeconds, money, page, parseAmount, plain, roleLabel, when } from './views.ts';
import { Readable } from 'node:stream';
import { hasSecondFactor } from '../identity/mfa/amr.ts';
import { exampleAmount, majorText } from '../payments/currency.ts';
import { CURRENCIES } from '../payments/common.schemas.ts';
import { METHOD_NAMES } from '../partners/methods.ts';
import type { Reserved } from '../payments/amounts.ts';
import { OPERATIONS, OPERATION_NAMES, availableFor } from '../payments/transitions.ts';

export const DASHBOARD_CLIENT_ID = 'payd-dashboard';
const COOKIE = 'payd_dashboard';
const LOGIN_COOKIE = 'payd_dashboard_login';
/** Set by a post of the dashboard: its pages read the primary while it lasts (a user sees their own change). */
const FRESH_COOKIE = 'payd_dashboard_fresh';
const TTL_SECONDS = 8 * 3600;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
// The filter offers the statuses a payment can have (no CANCELLED: no payment has it).
const STATUSES = AUTHORIZATION_STATUSES;

export interface DashboardDeps {
  db: Db;
  /** Where the pages' lists and figures are read (a replica when fresh enough); sign-ins, memberships and actions read db. */
  reads: ReadRouter;
  identity: IdentityService;
  payments: PaymentsService;
  operations: OperationsService;
  /** Origin of payd (the dashboard and, in role all, the identity provider). */
  origin: string;
  links: PaymentLinksService;
  entities: EntitiesService;
  onApiKeyRevoked: (keyId: string) => void;
  webhooks: WebhooksService;
  /** Invitation mails (the identity provider's outbox, SMTP when set) and the links in them. */
  mailer: Mailer;
  baseUrl: string;
  eligibilityRules: EligibilityRulesService;
  /** Origin where the identity provider's /oauth/authorize is served. */
  idpOrigin: string;
  key: Buffer;
  /** The request log's bound (PAYD_REQUEST_LOG_PER_SECOND; 0: off), said on the Requests page. */
  requestLogPerSecond: number;
}

interface Signed { userId: string; email: string; sid: string; csrf: string; memberships: Membership[]; amr: string[] }

/** What operations in flight (PENDING) reserve, per operation, as the Payment shows them. */
function reservedOfView(p: PaymentViewT): Reserved {
  const sum = (ops: Array<{ status: string; amount: number }>) => ops.filter((o) => o.status === 'PENDING').reduce((s, o) => s + o.amount, 0);
  return { capture: sum(p.captures), refund: sum(p.refunds), void: sum(p.voids) };
}

/** The action forms: one per operation of the table (transitions.ts), shown when the payment accepts it now. */
const ACTIONS: Record<string, { kind: OperationKind; path: string; verb: string; needs: Role; available: (p: PaymentViewT) => number }> = Object.fromEntries(
  OPERATION_NAMES.map((op) => [op, {
    kind: OPERATIONS[op].kind, path: OPERATIONS[op].path, verb: OPERATIONS[op].verb, needs: 'operator' as Role,
    available: (p: PaymentViewT) => availableFor(op, p.authorization.status, p.amounts, reservedOfView(p)),
  }]));

function readCookie(request: FastifyRequest, name: string): string | undefined {
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k !== name) continue;
    try {
      return decodeURIComponent(v.join('='));
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** The cards of a payment as the shopper knows them (network and last four; payd keeps no more of them). */
function cardsOf(p: PaymentViewT): Array<{ network: string; last_four: string; expiry_month?: string | undefined; expiry_year?: string | undefined }> {
  return p.authorization.partner_transactions.flatMap((t) => {
    const c = t.card as { selected_network?: string; last_four_digits?: string; expiry_month?: string; expiry_year?: string } | undefined;
    return c?.last_four_digits ? [{ network: c.selected_network ?? 'Card', last_four: c.last_four_digits, expiry_month: c.expiry_month, expiry_year: c.expiry_year }] : [];
  });
}

/** The CSV export: at most this many payments, read this many at a time. */
const EXPORT_MAX = 100_000;
const EXPORT_PAGE = 500;

/**
 * A CSV cell that no spreadsheet runs as a formula: a cell starting with = + - @, a tab or
 * a carriage return gets a leading apostrophe (OWASP "CSV injection"); then RFC 4180 quoting.
 */
export function csvCell(value: string): string {
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}
const csvLine = (cells: string[]) => `${cells.map(csvCell).join(',')}\r\n`;

/** The export's columns (docs/dashboard.md "CSV export"): amounts in major units of the currency, and in minor units. */
const amountColumns = (name: string, of: (p: PaymentViewT) => number) => [
  { name, value: (p: PaymentViewT) => majorText(of(p), p.currency, false) },
  { name: `${name}_minor`, value: (p: PaymentViewT) => String(of(p)) },
];
const CSV_COLUMNS: Array<{ name: string; value: (p: PaymentViewT, zone: string) => string }> = [
  { name: 'id', value: (p) => p.id },
  { name: 'created_at', value: (p) => new Date(p.created_at).toISOString() },
  { name: 'created_local', value: (p, zone) => localSeconds(p.created_at, zone) },
  { name: 'time_zone', value: (_p, zone) => zone },
  { name: 'order_reference', value: (p) => p.order_reference ?? '' },
  { name: 'status', value: (p) => p.authorization.status },
  { name: 'methods', value: (p) => p.split.map((s) => s.method).join(' + ') },
  { name: 'partners', value: (p) => p.split.map((s) => s.partner).join(' + ') },
  { name: 'currency', value: (p) => p.currency },
  ...amountColumns('amount', (p) => p.amount),
  ...amountColumns('captured', (p) => p.amounts.total_captured),
  ...amountColumns('refunded', (p) => p.amounts.total_refunded),
  ...amountColumns('voided', (p) => p.amounts.total_voided),
  { name: 'card', value: (p) => cardsOf(p).map((c) => `${c.network} ${c.last_four}`).join(' + ') },
];

/**
 * The CSV export's lines (a header, then one line per payment): pages of `pageSize` read
 * by keyset after the last id sent (the list's own query and index, through `readPage`),
 * each yielded as it is read, so that memory holds one page; at most `max` payments.
 */
export async function* paymentsCsv(
  readPage: (req: PageRequest) => Promise<Array<{ id: string; text: string }> | undefined>, filter: PaymentListQueryT, zone: string,
  { pageSize = EXPORT_PAGE, max = EXPORT_MAX } = {},
): AsyncGenerator<string> {
  yield csvLine(CSV_COLUMNS.map((c) => c.name));
  let after: string | undefined;
  for (let sent = 0; sent < max;) {
    const req = pageRequest({ ...filter, limit: String(Math.min(pageSize, max - sent)), ...(after ? { starting_after: after } : {}) });
    const texts = await readPage(req);
    const rows = texts ? pageOf(texts, req) : { items: [], has_more: false };
    if (rows.items.length === 0) return;
    yield rows.items.map((i) => csvLine(CSV_COLUMNS.map((c) => c.value(JSON.parse(i.text) as PaymentViewT, zone)))).join('');
    sent += rows.items.length;
    if (!rows.has_more) return;
    after = rows.items[rows.items.length - 1]!.id;
  }
}

export async function dashboardRoutes(app: FastifyInstance, deps: DashboardDeps) {
  const callback = `${deps.origin}/dashboard/callback`;
  await idpRepo.ensureConsoleApp(deps.db, DASHBOARD_CLIENT_ID, callback, deps.origin, 'payd dashboard');
  const secure = deps.origin.startsWith('https://') ? '; Secure' : '';
  const mac = (s: string) => createHmac('sha256', deps.key).update(s).digest('base64url');

  // Pages read their lists and figures from the read replica when it is no staler than
  // PAYD_READ_MAX_LAG_MS, except in answer to a post and for a while after one: whoever
  // just changed something sees it (the replica holds every commit older than the allowed
  // lag, so the cookie needs to outlive that lag only).
  const staleOk = (request: FastifyRequest) =>
    request.method === 'GET' && readCookie(request, FRESH_COOKIE) === undefined ? deps.reads.defaultMaxLagMs : 0;
  if (deps.reads.enabled) {
    const freshSeconds = Math.ceil(deps.reads.defaultMaxLagMs / 1000) + 1;
    app.addHook('onSend', async (request, reply, payload) => {
      if (request.method === 'POST' && reply.statusCode < 400) {
        reply.header('set-cookie', `${FRESH_COOKIE}=1; Max-Age=${freshSeconds}; HttpOnly; SameSite=Lax; Path=/dashboard${secure}`);
      }
      return payload;
    });
  }

  app.get(`${ASSETS}/dashboard.css`, { schema: { hide: true } }, async (_r, reply) =>
    reply.header('content-type', 'text/css; charset=utf-8').header('cache-control', 'public, max-age=3600').send(DASHBOARD_CSS));
  app.get(`${ASSETS}/dashboard.js`, { schema: { hide: true } }, async (_r, reply) =>
    reply.header('content-type', 'text/javascript; charset=utf-8').header('cache-control', 'public, max-age=3600').send(DASHBOARD_JS));

  /** The signed-in user, or a redirect to the provider's sign-in (undefined: the reply is sent). */
  const signedIn = async (request: FastifyRequest, reply: FastifyReply): Promise<Signed | undefined> => {
    const raw = readCookie(request, COOKIE);
    const [userId, exp, sid, sig] = (raw ?? '').split('.');
    const alive = userId && exp && sid && sig && safeEqual(mac(`${userId}.${exp}.${sid}`), sig) && Number(exp) > Date.now() / 1000
      ? await deps.identity.sessionAlive(sid, userId) : undefined;
    if (alive && userId && sid) {
      const user = await idpRepo.user(deps.db, userId);
      if (user && !user.blocked) {
        return { userId, email: user.email, sid, csrf: mac(`csrf.${raw}`), memberships: await membersRepo.membershipsOf(deps.db, userId), amr: alive.amr };
      }
    }
    const verifier = randomBytes(32).toString('base64url');
    const state = randomBytes(16).toString('base64url');
    const back = request.method === 'GET' && request.url.startsWith('/dashboard') && request.url.length < 1000 ? request.url : '/dashboard';
    const url = new URL(`${deps.idpOrigin}/oauth/authorize`);
    url.search = new URLSearchParams({
      response_type: 'code', client_id: DASHBOARD_CLIENT_ID, redirect_uri: callback, scope: 'openid profile email', state,
      code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256',
    }).toString();
    reply.header('set-cookie', `${LOGIN_COOKIE}=${state}.${verifier}.${Buffer.from(back).toString('base64url')}; HttpOnly; SameSite=Lax; Path=/dashboard${secure}`);
    reply.redirect(url.toString(), 303);
    return undefined;
  };

  /** The signed-in user and their membership of the URL's entity: a 404 page for anyone else. */
  const member = async (request: FastifyRequest, reply: FastifyReply, needs: Role = 'viewer'): Promise<(Signed & { entity: Membership }) | undefined> => {
    const s = await signedIn(request, reply);
    if (!s) return undefined;
    const entityId = (request.params as { entity?: string }).entity ?? '';
    const entity = s.memberships.find((m) => m.entity_id === entityId);
    if (!entity) {
      page(reply, 404, { title: 'Not found', email: s.email, csrf: s.csrf, memberships: s.memberships }, '<p>There is nothing here, or it is not yours to see.</p>');
      return undefined;
    }
    if (entity.second_factor_required && !hasSecondFactor(s.amr)) {
      // The team requires a second factor and this sign-in had none (amr without mfa): nothing of the entity is shown.
      page(reply, 403, { title: 'A second factor is required', email: s.email, csrf: s.csrf, memberships: s.memberships },
        `<p role="alert">${e(entity.entity_name)} requires its team to sign in with a second factor.</p>
<ol><li>If you have none yet, <a href="${e(deps.idpOrigin)}/oauth/account/security">add an authenticator app to your account</a>.</li>
<li>Then sign out (at the top of this page) and sign in again: the sign-in asks for your second factor.</li></ol>`);
      return undefined;
    }
    if (!can(entity.role, needs)) {
      page(reply, 403, { title: 'Not allowed', email: s.email, csrf: s.csrf, memberships: s.memberships, entity },
        `<p role="alert">Your role (${e(roleLabel[entity.role])}) cannot do this. Ask an administrator of ${e(entity.entity_name)}.</p>`);
      return undefined;
    }
    return { ...s, entity };
  };
  const csrfOk = (request: FastifyRequest, s: { csrf: string }) => {
    const given = (request.body as Record<string, unknown> | undefined)?.csrf;
    return typeof given === 'string' && safeEqual(given, s.csrf);
  };

  await linkAndKeyRoutes(app, { db: deps.db, reads: deps.reads, staleOk, links: deps.links, entities: deps.entities, onApiKeyRevoked: deps.onApiKeyRevoked, member, csrfOk });
  await webhookPageRoutes(app, { db: deps.db, webhooks: deps.webhooks, member, csrfOk });
  await eligibilityPageRoutes(app, { db: deps.db, rules: deps.eligibilityRules, member, csrfOk });
  await requestLogPageRoutes(app, { db: deps.db, perSecond: deps.requestLogPerSecond, member });
  await teamPageRoutes(app, { db: deps.db, entities: deps.entities, identity: deps.identity, mailer: deps.mailer, baseUrl: deps.baseUrl, member, csrfOk });

  // ---- sign-in and out ----

  app.get('/dashboard/callback', { schema: { hide: true } }, async (request, reply) => {
    const q = request.query as Record<string, string>;
    const [state, verifier, back] = (readCookie(request, LOGIN_COOKIE) ?? '').split('.');
    const failed = () => plain(reply, 400, 'Sign-in failed', '<p role="alert">The sign-in did not complete. <a href="/dashboard">Try again</a>.</p>');
    if (!state || !verifier || q.state !== state || !q.code) return failed();
    const sid = await deps.identity.codeSession(q.code);
    let userId: string;
    try {
      const tokens = await deps.identity.exchangeCode({}, { code: q.code, redirect_uri: callback, client_id: DASHBOARD_CLIENT_ID, code_verifier: verifier });
      userId = String(decodeJwt(tokens.access_token).payload.sub);
    } catch (err) {
      if (err instanceof Problem) return failed();
      throw err;
    }
    if (!sid) return failed();
    // Invitations whose link this user redeemed start now (members.routes.ts, inviteMember).
    await membersRepo.acceptRedeemed(deps.db, userId);
    const exp = Math.floor(Date.now() / 1000) + TTL_SECONDS;
    const target = (() => {
      const b = Buffer.from(back ?? '', 'base64url').toString();
      return b.startsWith('/dashboard') && !b.startsWith('//') ? b : '/dashboard';
    })();
    reply.header('set-cookie', [
      `${COOKIE}=${userId}.${exp}.${sid}.${mac(`${userId}.${exp}.${sid}`)}; HttpOnly; SameSite=Lax; Path=/dashboard${secure}`,
      `${LOGIN_COOKIE}=; Max-Age=0; Path=/dashboard`,
    ]);
    return reply.redirect(target, 303);
  });

  app.post('/dashboard/logout', { schema: { hide: true, body: Type.Record(Type.String(), Type.String({ maxLength: 1000 })) } }, async (request, reply) => {
    const raw = readCookie(request, COOKIE);
    const [userId, , sid] = (raw ?? '').split('.');
    if (!raw || !safeEqual(String((request.body as Record<string, string>).csrf ?? ''), mac(`csrf.${raw}`))) {
      return plain(reply, 403, 'Sign-out refused', '<p role="alert">The form expired; reload the page.</p>');
    }
    if (userId && sid) await deps.identity.endSessionById(sid);
    reply.header('set-cookie', `${COOKIE}=; Max-Age=0; HttpOnly; SameSite=Lax; Path=/dashboard${secure}`);
    return plain(reply, 200, 'Signed out', '<p>You are signed out. <a href="/dashboard">Sign in again</a>.</p>');
  });

  // ---- entities ----

  app.get('/dashboard', { schema: { hide: true } }, async (request, reply) => {
    const s = await signedIn(request, reply);
    if (!s) return reply;
    if (s.memberships.length === 1) return reply.redirect(`/dashboard/${s.memberships[0]!.entity_id}`, 303);
    const items = s.memberships.map((m) => `<li><a href="/dashboard/${e(m.entity_id)}">${e(m.entity_name)}</a> (${e(roleLabel[m.role])})</li>`).join('');
    return page(reply, 200, { title: 'Your merchants', email: s.email, csrf: s.csrf, memberships: s.memberships },
      items ? `<ul>${items}</ul>` : '<p>You are not a member of any merchant yet. Ask an administrator to invite you.</p>');
  });

  app.get('/dashboard/switch', { schema: { hide: true } }, async (request, reply) => {
    const entity = String((request.query as Record<string, unknown>).entity ?? '');
    return reply.redirect(UUID.test(entity) ? `/dashboard/${entity}` : '/dashboard', 303);
  });

  const EntityParams = Type.Object({ entity: Type.String({ pattern: UUID.source }) });

  // ---- home: today's volume and authorisation rate, the last 14 days ----

  app.get('/dashboard/:entity', { schema: { hide: true, params: EntityParams } }, async (request, reply) => {
    const m = await member(request, reply);
    if (!m) return reply;
    // Days are the merchant's (its time zone, Team page): today and the 13 days before it.
    const zone = m.entity.time_zone;
    const today = dayIn(Date.now(), zone);
    const days = Array.from({ length: 14 }, (_, i) => addDays(today, i - 13));
    const rows = (await deps.reads.read(staleOk(request), async (db) => (await db.query<{ day: string; currency: string; authorized: number; volume: string; refused: number }>(
      `SELECT to_char(created_at AT TIME ZONE $2, 'YYYY-MM-DD') AS day, currency,
              count(*) FILTER (WHERE authorization_status = 'AUTHORIZED')::int AS authorized,
              coalesce(sum(amount) FILTER (WHERE authorization_status = 'AUTHORIZED'), 0)::text AS volume,
              count(*) FILTER (WHERE authorization_status IN ('REFUSED', 'ERROR'))::int AS refused
         FROM payments WHERE entity_id = $1 AND created_at >= $3
        GROUP BY 1, 2`, [m.entity.entity_id, zone, dayStart(days[0]!, zone)])).rows))!;
    const currency = rows.find((r) => r.day === today)?.currency ?? rows[0]?.currency ?? 'EUR';
    const of = (day: string) => rows.filter((r) => r.day === day && r.currency === currency);
    const todayRows = of(today);
    const volume = todayRows.reduce((s, r) => s + Number(r.volume), 0);
    const authorized = todayRows.reduce((s, r) => s + r.authorized, 0);
    const decided = authorized + todayRows.reduce((s, r) => s + r.refused, 0);
    const rate = decided ? `${Math.round((authorized / decided) * 1000) / 10} %` : 'no payment yet';
    const series = days.map((day) => {
      const v = of(day).reduce((s, r) => s + Number(r.volume), 0);
      return { day, value: v, label: money(v, currency) };
    });
    return page(reply, 200, { title: `${m.entity.entity_name}: today`, email: m.email, csrf: m.csrf, memberships: m.memberships, entity: m.entity, current: 'home' }, `
<section class="cards" aria-label="Today">
<div class="card"><p class="label">Volume authorised today</p><p class="value">${e(money(volume, currency))}</p></div>
<div class="card"><p class="label">Authorisation rate today</p><p class="value">${e(rate)}</p></div>
<div class="card"><p class="label">Payments authorised today</p><p class="value">${authorized}</p></div>
</section>
${barChart(series, `Volume authorised per day, last 14 days (${currency}, days in ${zone})`)}
<p><a href="/dashboard/${e(m.entity.entity_id)}/payments">See the payments</a></p>`);
  });

  // ---- payments ----

  /**
   * The list page's filters (and the CSV export's: the same query string), as the filter of
   * GET /v2/payments (paymentListFilter, lists.routes.ts); dates are days in the merchant's
   * time zone. A payment id in the search box is `open` (the page opens it).
   */
  const listQuery = (q: Record<string, string | undefined>, zone: string) => {
    const str = (k: string, max = 255) => (typeof q[k] === 'string' && q[k]!.trim() !== '' && q[k]!.length <= max ? q[k]!.trim() : undefined);
    const problems: string[] = [];
    const filter: PaymentListQueryT = {};
    const status = str('status');
    if (status && (STATUSES as readonly string[]).includes(status)) filter.authorization_status = status;
    // One search box: a payment id opens that payment; an email, four digits (a card's last
    // four) or anything else (an order reference) filter the list.
    const ref = str('order_reference');
    const open = ref && UUID.test(ref) ? ref.toLowerCase() : undefined;
    if (ref && /^\d{4}$/.test(ref)) filter.card_last_four = ref;
    else if (ref && ref.includes('@')) filter.customer_email = ref;
    else if (ref) filter.order_reference = ref;
    const method = str('method', 64);
    if (method) filter.method = method;
    // Amounts are typed in major units of one currency (¥1,000 is 1000, €10.00 is 10.00): with amounts, a currency is needed.
    const currency = str('currency', 3);
    if (currency && CURRENCIES.includes(currency)) filter.currency = currency;
    for (const [field, key] of [['amount_min', 'amount_gte'], ['amount_max', 'amount_lte']] as const) {
      const v = str(field, 20);
      if (v === undefined) continue;
      const label = field === 'amount_min' ? 'Amount from' : 'Amount to';
      if (!filter.currency) {
        problems.push(`${label}: choose the currency the amount is in.`);
        continue;
      }
      const minor = parseAmount(v, filter.currency);
      if (minor === undefined) problems.push(`${label}: write it in ${filter.currency} like ${exampleAmount(filter.currency)}.`);
      else filter[key] = String(minor);
    }
    if (filter.amount_gte && filter.amount_lte && Number(filter.amount_gte) > Number(filter.amount_lte)) problems.push('Amount to must not be less than Amount from.');
    for (const [field, key, shift] of [['from', 'created_gte', 0], ['to', 'created_lt', 1]] as const) {
      const v = str(field, 10);
      if (v === undefined) continue;
      if (!/^\d{4}-\d{2}-\d{2}$/.test(v) || Number.isNaN(Date.parse(v))) problems.push(`${field === 'from' ? 'From' : 'To'}: a date such as 2026-11-24.`);
      else filter[key] = dayStart(addDays(v, shift), zone).toISOString();
    }
    if (filter.created_gte && filter.created_lt && filter.created_gte >= filter.created_lt) problems.push('To must be after From.');
    // The query string of these filters (pages and the export keep it).
    const keep = new URLSearchParams(Object.entries({ status, order_reference: ref, method, currency: filter.currency, amount_min: str('amount_min', 20), amount_max: str('amount_max', 20), from: str('from', 10), to: str('to', 10) })
      .filter((kv): kv is [string, string] => kv[1] !== undefined));
    return { filter, problems, keep, open, str };
  };

  app.get('/dashboard/:entity/payments', { schema: { hide: true, params: EntityParams } }, async (request, reply) => {
    const m = await member(request, reply);
    if (!m) return reply;
    const { filter, problems, keep, open, str } = listQuery(request.query as Record<string, string | undefined>, m.entity.time_zone);
    if (open) {
      const p = await stored(m.entity.entity_id, open);
      if (p) return reply.redirect(`/dashboard/${m.entity.entity_id}/payments/${p.id}`, 303);
    }
    const { authorization_status: status, method } = filter;
    const after = str('after', 36);
    const before = str('before', 36);
    if (after && UUID.test(after)) filter.starting_after = after;
    else if (before && UUID.test(before)) filter.ending_before = before;
    let rowsHtml = '';
    let pager = '';
    if (problems.length === 0) {
      let req;
      try {
        req = pageRequest({ ...filter, limit: '25' });
      } catch {
        problems.push('To must be after From.');
      }
      if (req) {
        const texts = await deps.reads.read(staleOk(request), (db) => deps.payments.listStoredJson(m.entity.entity_id, req!, paymentListFilter(filter), db));
        const pageRows = texts ? pageOf(texts, req) : { items: [], has_more: false, next_cursor: null };
        const items = pageRows.items.map((i) => JSON.parse(i.text) as PaymentViewT);
        const base = `/dashboard/${m.entity.entity_id}/payments`;
        rowsHtml = items.map((p) => `<tr>
<td>${e(when(p.created_at, m.entity.time_zone))}</td><td><a href="${base}/${e(p.id)}">${e(p.order_reference ?? p.id.slice(0, 8))}</a></td>
<td class="num">${e(money(p.amount, p.currency))}</td><td class="status">${e(p.authorization.status)}</td>
<td>${e(p.split.map((s) => s.method).join(' + '))}</td><td class="num">${e(money(p.amounts.total_captured, p.currency))}</td><td class="num">${e(money(p.amounts.total_refunded, p.currency))}</td></tr>`).join('');
        const link = (k: string, v: string, label: string) => `<a href="${base}?${new URLSearchParams([...keep, [k, v]])}" rel="${k === 'after' ? 'next' : 'prev'}">${label}</a>`;
        const goingBack = !!filter.ending_before;
        const newer = items.length && (goingBack ? pageRows.has_more : !!filter.starting_after) ? link('before', items[0]!.id, 'Newer') : '';
        const older = items.length && (goingBack || pageRows.has_more) ? link('after', items[items.length - 1]!.id, 'Older') : '';
        pager = `<nav class="pager" aria-label="Pages">${newer}${older}</nav>`;
      }
    }
    const opt = (v: string, label: string, current?: string) => `<option value="${e(v)}"${current === v ? ' selected' : ''}>${e(label)}</option>`;
    const field = (id: string, label: string, type = 'text', extra = '') =>
      `<div><label for="${id}">${label}</label><input id="${id}" name="${id}" type="${type}" value="${e(str(id) ?? '')}"${extra}></div>`;
    return page(reply, 200, { title: 'Payments', email: m.email, csrf: m.csrf, memberships: m.memberships, entity: m.entity, current: 'payments' }, `
<form method="get" class="filters" role="search" aria-label="Find payments">
${field('order_reference', 'Search (order reference, payment id, email, last four digits)')}
<div><label for="status">Status</label><select id="status" name="status">${opt('', 'Any')}${STATUSES.map((s) => opt(s, s.charAt(0) + s.slice(1).toLowerCase(), status)).join('')}</select></div>
<div><label for="method">Method</label><select id="method" name="method">${opt('', 'Any')}${METHOD_NAMES.map((x) => opt(x, x, method)).join('')}</select></div>
<div><label for="currency">Currency</label><select id="currency" name="currency">${opt('', 'Any')}${CURRENCIES.map((x) => opt(x, x, filter.currency)).join('')}</select></div>
${field('amount_min', 'Amount from', 'text', ' inputmode="decimal" placeholder="0.00"')}
${field('amount_max', 'Amount to', 'text', ' inputmode="decimal" placeholder="0.00"')}
${field('from', 'Created from', 'date')}
${field('to', 'Created to', 'date')}
<div><button type="submit">Search</button></div>
</form>
${problems.length ? `<div class="error" role="alert"><ul>${problems.map((p) => `<li>${e(p)}</li>`).join('')}</ul></div>` : ''}
<div class="table-wrap" role="region" tabindex="0" aria-label="Payments (scrolls sideways on small screens)"><table aria-label="Payments">
<thead><tr><th scope="col">Created</th><th scope="col">Order</th><th scope="col" class="num">Amount</th><th scope="col">Status</th><th scope="col">Method</th><th scope="col" class="num">Captured</th><th scope="col" class="num">Refunded</th></tr></thead>
<tbody>${rowsHtml || '<tr><td colspan="7">No payment matches.</td></tr>'}</tbody></table></div>
${pager}
${problems.length ? '' : `<p><a href="/dashboard/${e(m.entity.entity_id)}/payments.csv${keep.size ? `?${e(keep.toString())}` : ''}" download>Download these payments (CSV)</a> <span class="hint">every page of this search, newest first, at most ${EXPORT_MAX.toLocaleString('en-US')}</span></p>`}`);
  });

  // ---- the CSV export of the list's search (docs/dashboard.md "CSV export") ----

  app.get('/dashboard/:entity/payments.csv', { schema: { hide: true, params: EntityParams } }, async (request, reply) => {
    const m = await member(request, reply);
    if (!m) return reply;
    const zone = m.entity.time_zone;
    const { filter, problems } = listQuery(request.query as Record<string, string | undefined>, zone);
    if (problems.length) {
      return page(reply, 400, { title: 'Export refused', email: m.email, csrf: m.csrf, memberships: m.memberships, entity: m.entity, current: 'payments' },
        `<div class="error" role="alert"><ul>${problems.map((p) => `<li>${e(p)}</li>`).join('')}</ul></div><p><a href="/dashboard/${e(m.entity.entity_id)}/payments">Back to the payments</a></p>`);
    }
    const where = paymentListFilter(filter);
    const lag = staleOk(request);
    const lines = paymentsCsv((req) => deps.reads.read(lag, (db) => deps.payments.listStoredJson(m.entity.entity_id, req, where, db)), filter, zone);
    const name = `payments-${dayIn(Date.now(), zone)}.csv`;
    return reply.header('content-type', 'text/csv; charset=utf-8').header('content-disposition', `attachment; filename="${name}"`)
      .header('cache-control', 'no-store').header('x-content-type-options', 'nosniff').send(Readable.from(lines));
  });

  const PaymentParams = Type.Object({ entity: Type.String({ pattern: UUID.source }), id: Type.String({ pattern: UUID.source }) });

  const stored = async (entityId: string, id: string): Promise<PaymentViewT | undefined> => {
    try {
      return await deps.payments.getStored(entityId, id);
    } catch (err) {
      if (isProblem(err, PROBLEM_TYPE.notFound)) return undefined;
      throw err;
    }
  };

  const detail = async (reply: FastifyReply, m: Signed & { entity: Membership }, p: PaymentViewT, notice?: string, error?: string, status = 200) => {
    const base = `/dashboard/${m.entity.entity_id}/payments/${p.id}`;
    const actions = await membersRepo.actionsOf(deps.db, m.entity.entity_id, p.id);
    const events = await deps.webhooks.eventsOf(m.entity.entity_id, p.id);
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
    const form = (action: keyof typeof ACTIONS, withAmount: boolean) => {
      const a = ACTIONS[action]!;
      const available = a.available(p);
      if (!can(m.entity.role, a.needs) || available <= 0) return '';
      const id = `${action}-amount`;
      return `<form method="post" action="${base}/${action}" data-once>
<h3>${a.verb}</h3>
<input type="hidden" name="csrf" value="${e(m.csrf)}"><input type="hidden" name="idempotency_key" value="${randomUUID()}">
${withAmount ? `<label for="${id}">Amount (${e(p.currency)}), at most ${e(money(available, p.currency))}</label>
<input id="${id}" name="amount" inputmode="decimal" required value="${e(majorText(available, p.currency, false))}">` : `<p>Releases ${e(money(available, p.currency))} not captured.</p>`}
<button type="submit"${action === 'void' ? ' class="danger"' : ''}>${a.verb}…</button>
</form>`;
    };
    const forms = [form('capture', true), form('refund', true), form('void', false)].join('');
    // The card as the shopper knows it (network and last four; payd keeps no more of it).
    const cards = cardsOf(p).map((c) => `${c.network} •••• ${c.last_four}${c.expiry_month ? ` (expires ${c.expiry_month}/${String(c.expiry_year ?? '').slice(-2)})` : ''}`);
    return page(reply, status, { title: `Payment ${p.order_reference ?? p.id}`, email: m.email, csrf: m.csrf, memberships: m.memberships, entity: m.entity, current: 'payments' }, `
${notice ? `<p class="notice" role="status">${e(notice)}</p>` : ''}${error ? `<div class="error" role="alert">${e(error)}</div>` : ''}
<dl class="facts">
<dt>Payment</dt><dd><code>${e(p.id)}</code></dd>
<dt>Created</dt><dd>${e(when(p.created_at, m.entity.time_zone))}</dd>
<dt>Amount</dt><dd>${e(money(p.amount, p.currency))}</dd>
${cards.length ? `<dt>Card</dt><dd id="payment-card">${cards.map(e).join(', ')}</dd>` : ''}
<dt>Authorization</dt><dd class="status">${e(p.authorization.status)}</dd>
<dt>Captured</dt><dd>${e(money(p.amounts.total_captured, p.currency))} (${e(money(p.amounts.available_to_capture, p.currency))} left to capture)</dd>
<dt>Refunded</dt><dd>${e(money(p.amounts.total_refunded, p.currency))} (${e(money(p.amounts.available_to_refund, p.currency))} left to refund)</dd>
<dt>Voided</dt><dd>${e(money(p.amounts.total_voided, p.currency))}</dd>
<dt>Order</dt><dd>${e(p.order_reference ?? '—')}</dd>
</dl>
<h2>Split</h2>
<div class="table-wrap" role="region" tabindex="0" aria-label="Split (scrolls sideways on small screens)"><table aria-label="Split"><thead><tr><th scope="col">Partner</th><th scope="col">Method</th><th scope="col" class="num">Amount</th></tr></thead>
<tbody>${p.split.map((s) => `<tr><td>${e(s.partner)}</td><td>${e(s.method)}</td><td class="num">${e(money(s.amount, p.currency))}</td></tr>`).join('')}</tbody></table></div>
<h2>Partner transactions</h2>
<div class="table-wrap" role="region" tabindex="0" aria-label="Partner transactions (scrolls sideways on small screens)"><table aria-label="Partner transactions"><thead><tr><th scope="col">Partner</th><th scope="col">Status</th><th scope="col" class="num">Amount</th><th scope="col">Reference</th><th scope="col">Code</th></tr></thead>
<tbody>${txs.map((t) => `<tr><td>${e(t.partner)}</td><td>${e(t.status)}</td><td class="num">${e(money(t.amount, p.currency))}</td><td><code>${e(t.partner_reference ?? '—')}</code></td><td>${e(t.status_code ?? '')}</td></tr>`).join('')}</tbody></table></div>
<h2>Timeline</h2>
<ol class="timeline">${timeline.map((t) => `<li><time datetime="${e(t.at)}">${e(when(t.at, m.entity.time_zone))}</time>: ${t.href ? `<a href="${e(t.href)}">${e(t.text)}</a>` : e(t.text)}</li>`).join('')}</ol>
${forms ? `<h2>Actions</h2><div class="actions">${forms}</div>` : m.entity.role === 'viewer' ? '<p>Your role is read only.</p>' : ''}`);
  };

  app.get('/dashboard/:entity/payments/:id', { schema: { hide: true, params: PaymentParams } }, async (request, reply) => {
    const m = await member(request, reply);
    if (!m) return reply;
    const { id } = request.params as { id: string };
    const p = await stored(m.entity.entity_id, id);
    if (!p) return page(reply, 404, { title: 'Not found', email: m.email, csrf: m.csrf, memberships: m.memberships, entity: m.entity }, '<p>There is no such payment here.</p>');
    const { done, sent, declined, pending } = request.query as Record<string, unknown>;
    const known = (v: unknown): v is string => typeof v === 'string' && ACTIONS[v] !== undefined;
    // A declined operation is an error, never "done": the partner refused and nothing moved.
    if (known(declined)) {
      return detail(reply, m, p, undefined, `${ACTIONS[declined]!.verb} declined by the partner: nothing moved. The timeline below shows the partner's answer.`);
    }
    const notice = known(done) ? `${ACTIONS[done]!.verb} done.`
      : known(pending) ? `${ACTIONS[pending]!.verb} sent; the partner has not answered yet. The payment below shows where it stands.`
        : known(sent) ? `This ${sent} form was already sent once; nothing more was done. The payment below shows where it stands.` : undefined;
    return detail(reply, m, p, notice);
  });

  // Capture, refund, void: the form's post shows a confirmation; its confirmation moves the
  // money, once per form (the idempotency key was made when the form was shown).
  const ActionParams = Type.Object({ entity: Type.String({ pattern: UUID.source }), id: Type.String({ pattern: UUID.source }), action: StringEnum(Object.keys(ACTIONS)) });
  app.post('/dashboard/:entity/payments/:id/:action', {
    schema: { hide: true, params: ActionParams, body: Type.Record(Type.String(), Type.String({ maxLength: 200 })) },
  }, async (request, reply) => {
    const { id, action } = request.params as { id: string; action: string };
    const a = ACTIONS[action]!;
    const m = await member(request, reply, a.needs);
    if (!m) return reply;
    const body = request.body as Record<string, string>;
    if (!csrfOk(request, m)) return page(reply, 403, { title: 'Form expired', email: m.email, csrf: m.csrf, memberships: m.memberships, entity: m.entity }, '<p role="alert">The form expired or did not come from this dashboard. Go back and reload the payment.</p>');
    const p = await stored(m.entity.entity_id, id);
    if (!p) return page(reply, 404, { title: 'Not found', email: m.email, csrf: m.csrf, memberships: m.memberships, entity: m.entity }, '<p>There is no such payment here.</p>');
    const key = body.idempotency_key ?? '';
    if (!UUID.test(key)) return detail(reply, m, p, undefined, 'The form is incomplete: reload the payment.', 400);
    let amount: number | undefined;
    if (a.kind !== 'VOID') {
      amount = parseAmount(body.amount ?? '', p.currency);
      if (amount === undefined || amount <= 0) return detail(reply, m, p, undefined, `${a.verb}: write the amount in ${p.currency} like ${exampleAmount(p.currency)}.`, 400);
    }
    const base = `/dashboard/${m.entity.entity_id}/payments/${p.id}`;
    if (body.confirm !== 'yes') {
      return page(reply, 200, { title: `${a.verb} ${money(amount ?? a.available(p), p.currency)}?`, email: m.email, csrf: m.csrf, memberships: m.memberships, entity: m.entity, current: 'payments' }, `
<p>${e(a.verb)} ${amount === undefined ? `the ${e(money(a.available(p), p.currency))} not captured` : e(money(amount, p.currency))} of payment ${e(p.order_reference ?? p.id)}? This moves money at the partner and cannot be undone here.</p>
<form method="post" action="${base}/${action}" data-once class="confirm">
<input type="hidden" name="csrf" value="${e(m.csrf)}"><input type="hidden" name="idempotency_key" value="${e(key)}">
${amount === undefined ? '' : `<input type="hidden" name="amount" value="${e(body.amount!)}">`}<input type="hidden" name="confirm" value="yes">
<button type="submit"${a.kind === 'VOID' ? ' class="danger"' : ''}>Yes, ${e(a.verb.toLowerCase())}</button> <a href="${base}">No, go back</a>
</form>`);
    }
    // This form was sent already (a double click, a reload): its operation is done or under
    // way with this key; nothing more moves.
    if (await membersRepo.actionDone(deps.db, m.entity.entity_id, key)) return reply.redirect(`${base}?sent=${action}`, 303);
    let outcome: 'done' | 'declined' | 'pending';
    try {
      const result = await deps.operations.run(a.kind, m.entity.entity_id, p.id, amount === undefined ? {} : { amount }, {
        idempotencyKey: `dashboard:${key}`, instance: `/v2/payments/${p.id}/${a.path}`,
      });
      // The operation's own status says what happened: a 200 carries declined operations too.
      const op = [...result.payment.captures, ...result.payment.refunds, ...result.payment.voids].find((o) => o.id === result.operationId);
      outcome = op?.status === 'SUCCESS' ? 'done' : op?.status === 'FAILURE' ? 'declined' : 'pending';
      await membersRepo.recordAction(deps.db, {
        entity_id: m.entity.entity_id, user_id: m.userId, user_email: m.email, action: a.verb, payment_id: p.id, idempotency_key: key, amount: amount ?? a.available(p),
      });
    } catch (err) {
      // The same form's key at the API: its first post is in flight (a double click).
      if (isProblem(err, PROBLEM_TYPE.writeConflict, PROBLEM_TYPE.conflict)) return reply.redirect(`${base}?sent=${action}`, 303);
      if (err instanceof Problem && err.status < 500) {
        const now = (await stored(m.entity.entity_id, p.id)) ?? p;
        const params = (err.extra.invalid_params as Array<{ name: string; reason: string }> | undefined)?.map((x) => `${x.name} ${x.reason}`).join('; ');
        return detail(reply, m, now, undefined, `${a.verb} refused: ${params || err.detail || err.title}`, err.status);
      }
      throw err;
    }
    return reply.redirect(`${base}?${outcome}=${action}`, 303);
  });
}
