// The Checkout origins page (admins; docs/dashboard.md): the sites whose pages may embed
// this merchant's card frame and 3-D Secure frame (the entity's checkout_origins, the
// frames' CSP frame-ancestors, migration 0052). List, add one (checked as PATCH
// /admin/v1/entities/{id} checks each origin: EntitiesService.addCheckoutOrigin), remove
// one. Each change is recorded with the admin's email.
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { VNode } from 'preact';
import { Type } from 'typebox';
import { Problem } from '../platform/http/problem.ts';
import { CsrfField } from '../web/index.ts';
import type { DashboardService } from './dashboard.service.ts';
import type { EntitiesService } from '../admin/entities.service.ts';
import { MAX_CHECKOUT_ORIGINS } from '../admin/entities.schemas.ts';
import type { ExtraDeps, Member } from './links-keys.routes.ts';
import { page } from './views.ts';
import { EntityParams } from './params.ts';

export interface CheckoutOriginsDeps extends Pick<ExtraDeps, 'member' | 'csrfOk'> {
  dashboard: DashboardService;
  entities: EntitiesService;
}

const params = EntityParams;
const body = Type.Record(Type.String(), Type.String({ maxLength: 2048 }));
const FIELD = 'origin';

function Body({ m, origins, draft }: { m: Member; origins: string[]; draft: string }): VNode {
  const at = `/dashboard/${m.entity.entity_id}/checkout-origins`;
  return (
    <>
      <p>The sites whose pages may embed this merchant's card frame and 3-D Secure frame (the checkout's fields in your own page).
        Browsers refuse the frames in any other site's page (<code>Content-Security-Policy: frame-ancestors</code>); payd's own pages (hosted page, payment links) always may.</p>
      <p>{origins.length ? `${origins.length} of at most ${MAX_CHECKOUT_ORIGINS} origins.` : 'None listed: any site may embed the frames. List your shop\'s origins so that no other site can.'}</p>
      {origins.length ? (
        <ul aria-label="Checkout origins">
          {origins.map((o) => (
            <li>
              <form method="post" action={`${at}/remove`}>
                <CsrfField token={m.csrf} /><input type="hidden" name="origin" value={o} />
                <code>{o}</code> <button type="submit" class="link">Remove<span class="visually-hidden"> {o}</span></button>
              </form>
            </li>
          ))}
        </ul>
      ) : null}
      {origins.length < MAX_CHECKOUT_ORIGINS ? (
        <form method="post" action={at} class="card" data-once>
          <CsrfField token={m.csrf} />
          <label for="origin">Origin</label>
          <input id="origin" name="origin" type="text" inputMode="url" autocomplete="off" spellcheck={false} required maxlength={200} value={draft} aria-describedby="origin-hint" />
          <p class="hint" id="origin-hint">Scheme, host and port only, as the browser shows it: https://shop.example or https://shop.example:8443 (http only for localhost), no path.</p>
          <p><button type="submit">Add the origin</button></p>
        </form>
      ) : <p>The list is full: remove an origin to add another.</p>}
    </>
  );
}

export async function checkoutOriginsPageRoutes(app: FastifyInstance, deps: CheckoutOriginsDeps) {
  const record = (m: Member, action: string) => deps.dashboard.recordAction({
    entity_id: m.entity.entity_id, user_id: m.userId, user_email: m.email, action, payment_id: null, idempotency_key: null, amount: null,
  });
  const layout = (m: Member, title = 'Checkout origins') => ({ title, email: m.email, csrf: m.csrf, memberships: m.memberships, entity: m.entity, current: 'checkout' as const });
  const show = async (reply: FastifyReply, m: Member, status = 200, message?: { notice?: string; error?: string }, draft = '') => {
    const entity = await deps.entities.get(m.entity.entity_id);
    return page(reply, status, layout(m), (
      <>
        {message?.notice ? <p class="notice" role="status">{message.notice}</p> : null}
        {message?.error ? <div class="error" role="alert">{message.error}</div> : null}
        <Body m={m} origins={entity.checkout_origins} draft={draft} />
      </>
    ));
  };
  const refused = (reply: FastifyReply, m: Member) => page(reply, 403, layout(m, 'Form expired'),
    <p role="alert">The form expired or did not come from this dashboard. Reload the page and try again.</p>);

  app.get('/dashboard/:entity/checkout-origins', { schema: { hide: true, params } }, async (request, reply) => {
    const m = await deps.member(request, reply, 'admin');
    if (!m) return reply;
    const q = request.query as Record<string, unknown>;
    const notice = q.added === '1' ? 'The origin is added: its pages may embed the checkout\'s frames.'
      : q.removed === '1' ? 'The origin is removed: its pages may no longer embed the checkout\'s frames.' : undefined;
    return show(reply, m, 200, notice ? { notice } : undefined);
  });

  app.post('/dashboard/:entity/checkout-origins', { schema: { hide: true, params, body } }, async (request, reply) => {
    const m = await deps.member(request, reply, 'admin');
    if (!m) return reply;
    if (!deps.csrfOk(request, m)) return refused(reply, m);
    const text = (request.body as Record<string, string>)[FIELD] ?? '';
    let added;
    try {
      added = await deps.entities.addCheckoutOrigin(m.entity.entity_id, text, FIELD);
    } catch (err) {
      if (!(err instanceof Problem) || err.status >= 500) throw err;
      const why = (err.extra.invalid_params as Array<{ name: string; reason: string }> | undefined)?.map((p) => `Origin: ${p.reason}`).join('; ');
      return show(reply, m, err.status, { error: `The origin was not added. ${why || err.detail || err.title}` }, text);
    }
    if (added.added) await record(m, `Add checkout origin ${added.origin}`);
    return reply.redirect(`/dashboard/${m.entity.entity_id}/checkout-origins?added=1`, 303);
  });

  app.post('/dashboard/:entity/checkout-origins/remove', { schema: { hide: true, params, body } }, async (request, reply) => {
    const m = await deps.member(request, reply, 'admin');
    if (!m) return reply;
    if (!deps.csrfOk(request, m)) return refused(reply, m);
    const origin = (request.body as Record<string, string>)[FIELD] ?? '';
    const removed = await deps.entities.removeCheckoutOrigin(m.entity.entity_id, origin);
    if (removed.removed) await record(m, `Remove checkout origin ${origin}`);
    return reply.redirect(`/dashboard/${m.entity.entity_id}/checkout-origins?removed=1`, 303);
  });
}
