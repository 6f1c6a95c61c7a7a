// Pieces the dashboard's pages share: the layout of a member's page, the notice and error
// of a form's answer, a table that scrolls sideways on small screens (a labelled region),
// a read-only field with its copy button, a form's hidden fields, and the short pages
// (not found, form expired).
import type { FastifyReply } from 'fastify';
import type { ComponentChildren, VNode } from 'preact';
import { CsrfField } from '../web/index.ts';
import type { Member } from './auth.routes.ts';
import { type Layout, page } from './layout.tsx';

/** The layout of a member's page of the URL's entity. */
export const layoutOf = (m: Member, title: string, current?: Layout['current']): Layout =>
  ({ title, email: m.email, csrf: m.csrf, memberships: m.memberships, entity: m.entity, current });

/** The answer of a form: a notice (role status) and an error (role alert). */
export function Messages({ notice, error }: { notice?: string | undefined; error?: string | undefined }): VNode {
  return (
    <>
      {notice ? <p class="notice" role="status">{notice}</p> : null}
      {error ? <div class="error" role="alert">{error}</div> : null}
    </>
  );
}

/** A column heading: its name, or [name, 'num'] for a right-aligned figure. */
export type Column = string | [string, 'num'];

/**
 * A table in a region that scrolls sideways on small screens (focusable, so that keyboard
 * users can scroll it); `empty` is the one row shown when there is no row.
 */
export function Table(p: { label: string; cols: Column[]; rows: VNode[]; empty?: string; class?: string }): VNode {
  return (
    <div class="table-wrap" role="region" tabIndex={0} aria-label={`${p.label} (scrolls sideways on small screens)`}>
      <table aria-label={p.label} class={p.class}>
        <thead><tr>{p.cols.map((c) => (typeof c === 'string' ? <th scope="col">{c}</th> : <th scope="col" class="num">{c[0]}</th>))}</tr></thead>
        <tbody>{p.rows.length || p.empty === undefined ? p.rows : <tr><td colSpan={p.cols.length}>{p.empty}</td></tr>}</tbody>
      </table>
    </div>
  );
}

/** A read-only value (a URL, a key shown once) and its copy button (dashboard.js). */
export const CopyField = ({ id, value, label }: { id: string; value: string; label?: string }): VNode => (
  <>
    <input id={id} readonly value={value} aria-label={label} /> <button type="button" class="secondary" data-copy={id}>Copy</button>
  </>
);

export const Hidden = ({ name, value }: { name: string; value: string }): VNode => <input type="hidden" name={name} value={value} />;

/** A form that posts once (dashboard.js disables its button on submit), with the CSRF token. */
export function PostForm(p: { action: string; csrf: string; class?: string; children?: ComponentChildren }): VNode {
  return <form method="post" action={p.action} class={p.class} data-once><CsrfField token={p.csrf} />{p.children}</form>;
}

export const notFound = (reply: FastifyReply, m: Member, text: string, current?: Layout['current']) =>
  page(reply, 404, layoutOf(m, 'Not found', current), <p>{text}</p>);

export const formExpired = (reply: FastifyReply, m: Member, current?: Layout['current'], next = 'Reload the page and try again.') =>
  page(reply, 403, layoutOf(m, 'Form expired', current), <p role="alert">The form expired or did not come from this dashboard. {next}</p>);
