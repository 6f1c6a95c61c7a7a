// Dashboard pages beside payments: payment links (list, create, copy the customer URL,
// cancel; operators and admins act, viewers read) and Developers (API keys: create, shown
// once, revoke; admins only). The same services as the API and the operator API; a form
// that creates something carries a key made when it was shown, so a second post creates
// nothing more.
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Db } from '../platform/db/index.ts';
import type { ReadRouter } from '../platform/db/reads.ts';
import { Problem } from '../platform/http/problem.ts';
import { escapeHtml as e } from '../checkout/pages.ts';
import type { EntitiesService } from '../admin/entities.service.ts';
import type { PaymentLinksService } from '../links/links.service.ts';
import { LINK_COLUMNS } from '../links/links.repo.ts';
import { listsRepo } from '../payments/lists.repo.ts';
import { pageRequest } from '../payments/lists.routes.ts';
import { type Membership, type Role, can, membersRepo } from './members.ts';
import { money, page, parseAmount, when } from './views.ts';
import { exampleAmount } from '../payments/currency.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const CURRENCIES = ['EUR', 'USD', 'GBP', 'CHF'];

/** The signed-in member of the URL's entity; amr: how this sign-in was made (RFC 8176, src/identity/mfa/amr.ts). */
export interface Member { userId: string; email: string; csrf: string; memberships: Membership[]; entity: Membership; amr: string[] }

export interface ExtraDeps {
  db: Db;
  reads: ReadRouter;
  /** The staleness a page may show (dashboard.routes.ts). */
  staleOk: (request: FastifyRequest) => number;
  links: PaymentLinksService;
  entities: EntitiesService;
  onApiKeyRevoked: (keyId: string) => void;
  member: (request: FastifyRequest, reply: FastifyReply, needs?: Role) => Promise<Member | undefined>;
  csrfOk: (request: FastifyRequest, m: { csrf: string }) => boolean;
}

export async function linkAndKeyRoutes(app: FastifyInstance, deps: ExtraDeps) {
  const params = Type.Object({ entity: Type.String({ pattern: UUID.source }) });
  const withId = Type.Object({ entity: Type.String({ pattern: UUID.source }), id: Type.String({ pattern: UUID.source }) });
  const form = Type.Record(Type.String(), Type.String({ maxLength: 2048 }));
  const layout = (m: Member, title: string, current: 'links' | 'developers') => ({ title, email: m.email, csrf: m.csrf, memberships: m.memberships, entity: m.entity, current });
  const refused = (reply: FastifyReply, m: Member) => page(reply, 403, { title: 'Form expired', email: m.email, csrf: m.csrf, memberships: m.memberships, entity: m.entity },
    '<p role="alert">The form expired or did not come from this dashboard. Reload the page and try again.</p>');

  // ---- payment links ----

  const linksPage = async (reply: FastifyReply, m: Member, status = 200, message?: { notice?: string; error?: string }, values: Record<string, string> = {}) => {
    const req = pageRequest({ limit: '50' });
    const rows = (await deps.reads.read(deps.staleOk(reply.request), (db) => listsRepo.paymentLinks(db, m.entity.entity_id, req, { where: [], params: [] }, LINK_COLUMNS))) ?? [];
    const links = rows.slice(0, 50).map((r) => deps.links.view(r));
    const act = can(m.entity.role, 'operator');
    const base = `/dashboard/${m.entity.entity_id}/links`;
    const rowsHtml = links.map((l) => `<tr>
<td>${e(when(l.created_at, m.entity.time_zone))}</td><td>${e((l.order as { reference?: string } | undefined)?.reference ?? '—')}</td><td class="num">${e(money(l.amount, l.currency))}</td><td class="status">${e(l.status)}</td><td>${e(when(l.expires_at, m.entity.time_zone))}</td>
<td><input aria-label="Customer URL of the link for ${e(money(l.amount, l.currency))}" readonly value="${e(l.links.customer_url.href)}" id="url-${e(l.id)}"> <button type="button" class="secondary" data-copy="url-${e(l.id)}">Copy</button></td>
<td><a href="${base}/${e(l.id)}" aria-label="Details of the link for ${e(money(l.amount, l.currency))}">Details</a> ${l.payment_id ? `<a href="/dashboard/${e(m.entity.entity_id)}/payments/${e(l.payment_id)}">Payment</a>` : ''}${act && l.status === 'CREATED' ? `<form method="post" action="${base}/${e(l.id)}/cancel" data-once><input type="hidden" name="csrf" value="${e(m.csrf)}"><button type="submit" class="secondary">Cancel</button></form>` : ''}</td></tr>`).join('');
    const v = (k: string, d = '') => e(values[k] ?? d);
    const create = act ? `<h2>New payment link</h2>
<form method="post" action="${base}" class="filters" data-once>
<input type="hidden" name="csrf" value="${e(m.csrf)}"><input type="hidden" name="form_key" value="${randomUUID()}">
<div><label for="link-amount">Amount</label><input id="link-amount" name="amount" inputmode="decimal" required placeholder="0.00" value="${v('amount')}"></div>
<div><label for="link-currency">Currency</label><select id="link-currency" name="currency">${CURRENCIES.map((c) => `<option${(values.currency ?? 'EUR') === c ? ' selected' : ''}>${c}</option>`).join('')}</select></div>
<div><label for="link-order">Order reference</label><input id="link-order" name="order_reference" maxlength="255" value="${v('order_reference')}"></div>
<div><label for="link-days">Expires in (days)</label><input id="link-days" name="days" inputmode="numeric" value="${v('days', '7')}"></div>
<div><label for="link-return">Return URL (optional)</label><input id="link-return" name="return_url" type="url" value="${v('return_url')}"></div>
<div><label for="link-webhook">Webhook URL (optional: this link's events go there instead of the endpoint)</label><input id="link-webhook" name="webhook_url" type="url" value="${v('webhook_url')}"></div>
<div><button type="submit">Create the link</button></div>
</form>` : '';
    return page(reply, status, layout(m, 'Payment links', 'links'), `
${message?.notice ? `<p class="notice" role="status">${e(message.notice)}</p>` : ''}${message?.error ? `<div class="error" role="alert">${e(message.error)}</div>` : ''}
${create}
<h2>Links</h2>
<div class="table-wrap" role="region" tabindex="0" aria-label="Payment links (scrolls sideways on small screens)"><table aria-label="Payment links">
<thead><tr><th scope="col">Created</th><th scope="col">Order</th><th scope="col" class="num">Amount</th><th scope="col">Status</th><th scope="col">Expires</th><th scope="col">Customer URL</th><th scope="col">Actions</th></tr></thead>
<tbody>${rowsHtml || '<tr><td colspan="7">No payment link yet.</td></tr>'}</tbody></table></div>`);
  };

  app.get('/dashboard/:entity/links', { schema: { hide: true, params } }, async (request, reply) => {
    const m = await deps.member(request, reply);
    if (!m) return reply;
    const q = request.query as Record<string, unknown>;
    return linksPage(reply, m, 200, q.created === '1' ? { notice: 'The link is created: copy its customer URL below.' } : q.cancelled === '1' ? { notice: 'The link is cancelled.' } : undefined);
  });

  app.post('/dashboard/:entity/links', { schema: { hide: true, params, body: form } }, async (request, reply) => {
    const m = await deps.member(request, reply, 'operator');
    if (!m) return reply;
    if (!deps.csrfOk(request, m)) return refused(reply, m);
    const b = request.body as Record<string, string>;
    const key = b.form_key ?? '';
    if (!UUID.test(key)) return linksPage(reply, m, 400, { error: 'The form is incomplete: reload the page.' });
    if (await membersRepo.actionDone(deps.db, m.entity.entity_id, key)) return reply.redirect(`/dashboard/${m.entity.entity_id}/links?created=1`, 303);
    const again = (error: string) => linksPage(reply, m, 400, { error }, b);
    if (!CURRENCIES.includes(b.currency ?? '')) return again(`Currency: one of ${CURRENCIES.join(', ')}.`);
    const amount = parseAmount(b.amount ?? '', b.currency!);
    if (amount === undefined || amount <= 0) return again(`Amount: write it in ${b.currency} like ${exampleAmount(b.currency!)}.`);
    const days = Number(b.days || '7');
    if (!Number.isInteger(days) || days < 1 || days > 90) return again('Expires in: 1 to 90 days.');
    const ret = (b.return_url ?? '').trim();
    if (ret && (!URL.canParse(ret) || !/^https?:\/\//.test(ret))) return again('Return URL: an http(s) address, or nothing.');
    const hook = (b.webhook_url ?? '').trim();
    if (hook && (!URL.canParse(hook) || !/^https?:\/\//.test(hook))) return again('Webhook URL: an http(s) address, or nothing.');
    const ref = (b.order_reference ?? '').trim();
    let created;
    try {
      created = await deps.links.create(m.entity.entity_id, {
        amount, currency: b.currency as 'EUR', expires_at: new Date(Date.now() + days * 86_400_000).toISOString(),
        ...(ref ? { order: { reference: ref.slice(0, 255) } } : {}), ...(ret ? { shopper_redirection_url: ret } : {}),
        ...(hook ? { webhook: { url: hook } } : {}),
      } as never);
    } catch (err) {
      if (err instanceof Problem && err.status < 500) return again(err.detail ?? err.title);
      throw err;
    }
    await membersRepo.recordAction(deps.db, {
      entity_id: m.entity.entity_id, user_id: m.userId, user_email: m.email, action: 'Create payment link', payment_id: (created as { id: string }).id, idempotency_key: key, amount,
    });
    return reply.redirect(`/dashboard/${m.entity.entity_id}/links?created=1`, 303);
  });

  // A link's page: what it asks for, and its attempts (each a payment made through one of
  // its checkout sessions: declined ones too), newest first.
  app.get('/dashboard/:entity/links/:id', { schema: { hide: true, params: withId } }, async (request, reply) => {
    const m = await deps.member(request, reply);
    if (!m) return reply;
    const id = (request.params as { id: string }).id;
    let l;
    try {
      l = await deps.links.get(m.entity.entity_id, id);
    } catch (err) {
      if (err instanceof Problem && err.status === 404) return page(reply, 404, { title: 'Not found', email: m.email, csrf: m.csrf, memberships: m.memberships, entity: m.entity }, '<p>There is no such link here.</p>');
      throw err;
    }
    const rows = (await deps.reads.read(deps.staleOk(request), async (db) => (await db.query<{ id: string; created_at: Date; amount: number; currency: string; authorization_status: string }>(
      `SELECT p.id, p.created_at, p.amount, p.currency, p.authorization_status
         FROM client_sessions s JOIN payments p ON p.client_session_id = s.id
        WHERE s.payment_link_id = $1 AND s.entity_id = $2 AND p.entity_id = $2
        ORDER BY p.created_at DESC, p.id DESC LIMIT 50`, [id, m.entity.entity_id])).rows))!;
    const link = l as unknown as { id: string; status: string; amount: number; currency: string; expires_at: string; created_at: string; order?: { reference?: string }; links: { customer_url: { href: string } } };
    const payments = `/dashboard/${m.entity.entity_id}/payments`;
    const attempts = rows.map((r) => `<tr><td>${e(when(r.created_at, m.entity.time_zone))}</td><td><a href="${payments}/${e(r.id)}">${e(r.id.slice(0, 8))}</a></td><td class="num">${e(money(Number(r.amount), r.currency))}</td><td class="status">${e(r.authorization_status)}</td></tr>`).join('');
    return page(reply, 200, layout(m, `Payment link ${link.order?.reference ?? link.id.slice(0, 8)}`, 'links'), `
<p><a href="/dashboard/${e(m.entity.entity_id)}/links">All links</a></p>
<dl class="facts"><dt>Link</dt><dd><code>${e(link.id)}</code></dd><dt>Amount</dt><dd>${e(money(link.amount, link.currency))}</dd><dt>Status</dt><dd class="status">${e(link.status)}</dd>
<dt>Created</dt><dd>${e(when(link.created_at, m.entity.time_zone))}</dd><dt>Expires</dt><dd>${e(when(link.expires_at, m.entity.time_zone))}</dd><dt>Order</dt><dd>${e(link.order?.reference ?? '—')}</dd></dl>
<label for="link-url">Customer URL</label><input id="link-url" readonly value="${e(link.links.customer_url.href)}"> <button type="button" class="secondary" data-copy="link-url">Copy</button>
<h2>Attempts</h2>
<div class="table-wrap" role="region" tabindex="0" aria-label="Attempts (scrolls sideways on small screens)"><table aria-label="Attempts">
<thead><tr><th scope="col">When</th><th scope="col">Payment</th><th scope="col" class="num">Amount</th><th scope="col">Authorization</th></tr></thead>
<tbody>${attempts || '<tr><td colspan="4">No attempt yet.</td></tr>'}</tbody></table></div>`);
  });

  app.post('/dashboard/:entity/links/:id/cancel', { schema: { hide: true, params: withId, body: form } }, async (request, reply) => {
    const m = await deps.member(request, reply, 'operator');
    if (!m) return reply;
    if (!deps.csrfOk(request, m)) return refused(reply, m);
    try {
      await deps.links.cancel(m.entity.entity_id, (request.params as { id: string }).id);
    } catch (err) {
      if (err instanceof Problem && err.status === 404) return page(reply, 404, { title: 'Not found', email: m.email, csrf: m.csrf, memberships: m.memberships, entity: m.entity }, '<p>There is no such link here.</p>');
      if (err instanceof Problem && err.status < 500) return linksPage(reply, m, err.status, { error: `The link could not be cancelled: ${err.detail ?? err.title}` });
      throw err;
    }
    return reply.redirect(`/dashboard/${m.entity.entity_id}/links?cancelled=1`, 303);
  });

  // ---- developers: API keys (admins) ----

  const keysPage = async (reply: FastifyReply, m: Member, extra = '', status = 200) => {
    const keys = await deps.entities.listApiKeys(m.entity.entity_id);
    const base = `/dashboard/${m.entity.entity_id}/developers`;
    const rows = keys.map((k) => `<tr><td><code>${e(k.prefix)}…</code></td><td>${e(when(k.created_at, m.entity.time_zone))}</td><td>${k.revoked_at ? `revoked ${e(when(k.revoked_at, m.entity.time_zone))}` : 'active'}</td>
<td>${k.revoked_at ? '' : `<form method="post" action="${base}/api-keys/${e(k.id)}/revoke" data-once><input type="hidden" name="csrf" value="${e(m.csrf)}"><button type="submit" class="danger">Revoke</button></form>`}</td></tr>`).join('');
    return page(reply, status, layout(m, 'Developers', 'developers'), `${extra}
<h2>API keys</h2>
<p>An API key gets access tokens for the Payment API (<code>POST /oauth/token</code> with <code>x-api-key</code>). A new key is shown once.</p>
<form method="post" action="${base}/api-keys" data-once><input type="hidden" name="csrf" value="${e(m.csrf)}"><button type="submit">Create an API key</button></form>
<div class="table-wrap" role="region" tabindex="0" aria-label="API keys (scrolls sideways on small screens)"><table aria-label="API keys">
<thead><tr><th scope="col">Key</th><th scope="col">Created</th><th scope="col">Status</th><th scope="col">Actions</th></tr></thead>
<tbody>${rows || '<tr><td colspan="4">No API key.</td></tr>'}</tbody></table></div>`);
  };

  app.get('/dashboard/:entity/developers', { schema: { hide: true, params } }, async (request, reply) => {
    const m = await deps.member(request, reply, 'admin');
    if (!m) return reply;
    return keysPage(reply, m, (request.query as Record<string, unknown>).revoked === '1' ? '<p class="notice" role="status">The key is revoked: it gets no new token, and its tokens stop working within seconds.</p>' : '');
  });

  app.post('/dashboard/:entity/developers/api-keys', { schema: { hide: true, params, body: form } }, async (request, reply) => {
    const m = await deps.member(request, reply, 'admin');
    if (!m) return reply;
    if (!deps.csrfOk(request, m)) return refused(reply, m);
    const key = await deps.entities.createApiKey(m.entity.entity_id);
    await membersRepo.recordAction(deps.db, { entity_id: m.entity.entity_id, user_id: m.userId, user_email: m.email, action: 'Create API key', payment_id: null, idempotency_key: null, amount: null });
    // Shown in this answer only (no-store); it is not kept anywhere readable.
    return keysPage(reply, m, `<div class="notice" role="status"><p>Your new API key, shown this once: copy it now.</p>
<label for="new-key">API key</label><input id="new-key" readonly value="${e(key.api_key)}"> <button type="button" class="secondary" data-copy="new-key">Copy</button></div>`, 201);
  });

  app.post('/dashboard/:entity/developers/api-keys/:id/revoke', { schema: { hide: true, params: withId, body: form } }, async (request, reply) => {
    const m = await deps.member(request, reply, 'admin');
    if (!m) return reply;
    if (!deps.csrfOk(request, m)) return refused(reply, m);
    let revoked;
    try {
      revoked = await deps.entities.revokeApiKey(m.entity.entity_id, (request.params as { id: string }).id);
    } catch (err) {
      if (err instanceof Problem && err.status === 404) return page(reply, 404, { title: 'Not found', email: m.email, csrf: m.csrf, memberships: m.memberships, entity: m.entity }, '<p>There is no such key here.</p>');
      throw err;
    }
    deps.onApiKeyRevoked(revoked.id);
    await membersRepo.recordAction(deps.db, { entity_id: m.entity.entity_id, user_id: m.userId, user_email: m.email, action: 'Revoke API key', payment_id: null, idempotency_key: null, amount: null });
    return reply.redirect(`/dashboard/${m.entity.entity_id}/developers?revoked=1`, 303);
  });
}
