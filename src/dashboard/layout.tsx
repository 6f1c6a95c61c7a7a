// The dashboard's chrome on the web layer's one document (src/web): a skip link, the
// header (merchant switch, sign-out form with its CSRF token), the navigation, the page's
// heading. A page body is a node (the *-page.tsx components).
import type { FastifyReply } from 'fastify';
import type { VNode } from 'preact';
import { CsrfField, Document, csp, sendHtml } from '../web/index.ts';
import type { Membership } from './members.ts';

export const ASSETS = '/dashboard/assets';
const CSP = csp();

export interface Layout {
  title: string;
  email: string;
  csrf: string;
  entity?: Membership | undefined;
  memberships: Membership[];
  current?: 'home' | 'payments' | 'links' | 'developers' | 'webhooks' | 'team' | 'eligibility' | 'requests' | 'checkout' | undefined;
}


function Header({ l }: { l: Layout }): VNode {
  return (
    <header>
      <p class="brand"><a href="/dashboard">payd</a></p>
      {l.memberships.length > 1 ? (
        <form method="get" action="/dashboard/switch" class="switch">
          <label for="entity-switch">Merchant</label>
          <select id="entity-switch" name="entity">
            {l.memberships.map((m) => <option value={m.entity_id} selected={m.entity_id === l.entity?.entity_id}>{m.entity_name}</option>)}
          </select>
          <button type="submit">Open</button>
        </form>
      ) : l.entity ? <span class="merchant">{l.entity.entity_name}</span> : null}
      <form method="post" action="/dashboard/logout" class="signout">
        <CsrfField token={l.csrf} />
        <span class="who">{l.email}{l.entity ? ` · ${l.entity.role}` : ''}</span> <button type="submit" class="link">Sign out</button>
      </form>
    </header>
  );
}

function Nav({ l, entity }: { l: Layout; entity: Membership }): VNode {
  const base = `/dashboard/${entity.entity_id}`;
  const items: Array<[string, string, Layout['current']]> = [[base, 'Home', 'home'], [`${base}/payments`, 'Payments', 'payments'], [`${base}/links`, 'Payment links', 'links']];
  if (entity.role === 'admin') {
    items.push([`${base}/developers`, 'Developers', 'developers'], [`${base}/requests`, 'Requests', 'requests'], [`${base}/webhooks`, 'Webhooks', 'webhooks'],
      [`${base}/eligibility`, 'Eligibility', 'eligibility'], [`${base}/team`, 'Team', 'team']);
    items.push([`${base}/checkout-origins`, 'Checkout origins', 'checkout']);
  }
  return (
    <nav aria-label="Dashboard">
      <ul>{items.map(([href, label, key]) => <li><a href={href} aria-current={l.current === key ? 'page' : undefined}>{label}</a></li>)}</ul>
    </nav>
  );
}

/** A page of the signed-in dashboard. */
export function page(reply: FastifyReply, status: number, l: Layout, body: VNode): FastifyReply {
  return sendHtml(reply, status, (
    <Document title={`${l.title} · payd dashboard`} stylesheets={[`${ASSETS}/dashboard.css`]} scripts={[`${ASSETS}/dashboard.js`]}>
      <a class="skip" href="#main">Skip to content</a>
      <Header l={l} />
      {l.entity ? <Nav l={l} entity={l.entity} /> : null}
      <main id="main">
        <h1>{l.title}</h1>
        {body}
      </main>
    </Document>
  ), { csp: CSP });
}

/** A page outside an entity (sign-in failures, no membership). */
export function plain(reply: FastifyReply, status: number, title: string, body: VNode): FastifyReply {
  return sendHtml(reply, status, (
    <Document title={`${title} · payd dashboard`} stylesheets={[`${ASSETS}/dashboard.css`]}>
      <main id="main"><h1>{title}</h1>{body}</main>
    </Document>
  ), { csp: CSP });
}
