// Payment links pages: list, create, copy the customer URL, cancel (operators and admins
// act, viewers read), a link's attempts. The same PaymentLinksService as the API; the
// create form carries a key made when it was shown, so a second post creates nothing more.
import type { FastifyInstance, FastifyReply } from 'fastify';
import { Type } from 'typebox';
import { Problem } from '../platform/http/problem.ts';
import { pageRequest } from '../platform/http/lists.ts';
import { exampleAmount } from '../money/currency.ts';
import type { ExtraDeps, Member } from './links-keys.routes.ts';
import { EntityParams, IdParams, UUID } from './params.ts';
import { formExpired, layoutOf, notFound } from './parts.tsx';
import { LINK_CURRENCIES, LinkDetail, LinksBody, linkTitle } from './links-page.tsx';
import { page, parseAmount } from './views.ts';

export async function linkRoutes(app: FastifyInstance, deps: ExtraDeps) {
  const form = Type.Record(Type.String(), Type.String({ maxLength: 2048 }));
  const noSuchLink = (reply: FastifyReply, m: Member) => notFound(reply, m, 'There is no such link here.');

  const linksPage = async (reply: FastifyReply, m: Member, status = 200, message?: { notice?: string; error?: string }, values: Record<string, string> = {}) => {
    const req = pageRequest({ limit: '50' });
    const rows = (await deps.reads.read(deps.staleOk(reply.request), (db) => deps.links.list(db, m.entity.entity_id, req))) ?? [];
    const links = rows.slice(0, 50).map((r) => deps.links.view(r));
    return page(reply, status, layoutOf(m, 'Payment links', 'links'), LinksBody({ m, links, message, values }));
  };

  app.get('/dashboard/:entity/links', { schema: { hide: true, params: EntityParams } }, async (request, reply) => {
    const m = await deps.member(request, reply);
    if (!m) return reply;
    const q = request.query as Record<string, unknown>;
    return linksPage(reply, m, 200, q.created === '1' ? { notice: 'The link is created: copy its customer URL below.' } : q.cancelled === '1' ? { notice: 'The link is cancelled.' } : undefined);
  });

  app.post('/dashboard/:entity/links', { schema: { hide: true, params: EntityParams, body: form } }, async (request, reply) => {
    const m = await deps.member(request, reply, 'operator');
    if (!m) return reply;
    if (!deps.csrfOk(request, m)) return formExpired(reply, m);
    const b = request.body as Record<string, string>;
    const key = b.form_key ?? '';
    if (!UUID.test(key)) return linksPage(reply, m, 400, { error: 'The form is incomplete: reload the page.' });
    if (await deps.dashboard.actionDone(m.entity.entity_id, key)) return reply.redirect(`/dashboard/${m.entity.entity_id}/links?created=1`, 303);
    const again = (error: string) => linksPage(reply, m, 400, { error }, b);
    if (!LINK_CURRENCIES.includes(b.currency ?? '')) return again(`Currency: one of ${LINK_CURRENCIES.join(', ')}.`);
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
    await deps.dashboard.recordAction({
      entity_id: m.entity.entity_id, user_id: m.userId, user_email: m.email, action: 'Create payment link', payment_id: created.id, idempotency_key: key, amount,
    });
    return reply.redirect(`/dashboard/${m.entity.entity_id}/links?created=1`, 303);
  });

  app.get('/dashboard/:entity/links/:id', { schema: { hide: true, params: IdParams } }, async (request, reply) => {
    const m = await deps.member(request, reply);
    if (!m) return reply;
    const id = (request.params as { id: string }).id;
    let link;
    try {
      link = await deps.links.get(m.entity.entity_id, id);
    } catch (err) {
      if (err instanceof Problem && err.status === 404) return noSuchLink(reply, m);
      throw err;
    }
    const attempts = (await deps.reads.read(deps.staleOk(request), (db) => deps.links.attempts(db, m.entity.entity_id, id))) ?? [];
    return page(reply, 200, layoutOf(m, linkTitle(link), 'links'), LinkDetail({ m, link, attempts }));
  });

  app.post('/dashboard/:entity/links/:id/cancel', { schema: { hide: true, params: IdParams, body: form } }, async (request, reply) => {
    const m = await deps.member(request, reply, 'operator');
    if (!m) return reply;
    if (!deps.csrfOk(request, m)) return formExpired(reply, m);
    try {
      await deps.links.cancel(m.entity.entity_id, (request.params as { id: string }).id);
    } catch (err) {
      if (err instanceof Problem && err.status === 404) return noSuchLink(reply, m);
      if (err instanceof Problem && err.status < 500) return linksPage(reply, m, err.status, { error: `The link could not be cancelled: ${err.detail ?? err.title}` });
      throw err;
    }
    return reply.redirect(`/dashboard/${m.entity.entity_id}/links?cancelled=1`, 303);
  });
}
