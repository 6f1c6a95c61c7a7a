// What the webhook pages share (webhooks.routes.ts registers them): their dependencies,
// the route parameters, the layout of a page, the refusals (expired form, not found), a
// problem of the API said in a sentence, and the pieces every page shows.
import type { FastifyReply } from 'fastify';
import type { VNode } from 'preact';
import { Type } from 'typebox';
import type { Queryable } from '../platform/db/index.ts';
import { isProblem, Problem, PROBLEM_TYPE } from '../platform/http/problem.ts';
import type { DashboardService } from './dashboard.service.ts';
import type { WebhooksService } from '../webhooks/webhooks.service.ts';
import type { ExtraDeps, Member } from './links-keys.routes.ts';
import { page } from './views.ts';
import { EntityParams, UUID } from './params.ts';

export interface WebhookPageDeps extends Pick<ExtraDeps, 'member' | 'csrfOk'> {
  dashboard: DashboardService;
  webhooks: WebhooksService;
}
/** The admin's actions, recorded through DashboardService.recordAction; with a form's key, once (false the second time). */
export interface ActionLog {
  record(by: ReturnType<typeof actor>, action: string, opts?: { key?: string; q?: Queryable }): Promise<boolean>;
}
export interface WebhookRouteDeps extends WebhookPageDeps {
  actions: ActionLog;
}

export { EntityParams };
export const isUuid = (s: unknown): s is string => typeof s === 'string' && UUID.test(s);
export const EndpointParams = Type.Object({ entity: Type.String({ pattern: UUID.source }), endpoint: Type.String({ pattern: UUID.source }) });
export const EventParams = Type.Object({ entity: Type.String({ pattern: UUID.source }), event: Type.String({ pattern: UUID.source }) });
/** A posted form: text fields, and the event types' checkboxes (a repeated field). */
export const FormBody = Type.Record(Type.String(), Type.Union([Type.String({ maxLength: 8192 }), Type.Array(Type.String({ maxLength: 200 }), { maxItems: 100 })]));
export type Form = Record<string, string | string[] | undefined>;
export const text = (f: Form, name: string): string => { const v = f[name]; return typeof v === 'string' ? v : ''; };
export const list = (f: Form, name: string): string[] => { const v = f[name]; return v === undefined ? [] : typeof v === 'string' ? [v] : v; };

/** How long the previous signing secret still signs after a rotation from the dashboard. */
export const ROTATION_OVERLAP_SECONDS = 24 * 3600;

export const base = (m: Member) => `/dashboard/${m.entity.entity_id}/webhooks`;
export const actor = (m: Member) => ({ entityId: m.entity.entity_id, userId: m.userId, email: m.email });
export const layout = (m: Member, title: string) => ({ title, email: m.email, csrf: m.csrf, memberships: m.memberships, entity: m.entity, current: 'webhooks' as const });

export const refused = (reply: FastifyReply, m: Member) => page(reply, 403, layout(m, 'Form expired'),
  <p role="alert">The form expired or did not come from this dashboard. Reload the page and try again.</p>);
export const notFound = (reply: FastifyReply, m: Member, what = 'event') => page(reply, 404, layout(m, 'Not found'), <p>There is no such {what} here.</p>);

/** A refusal of the service (4xx) in a sentence: each invalid field with its reason, else the detail. */
export function problemText(err: Problem): string {
  const why = (err.extra.invalid_params as Array<{ name: string; reason: string }> | undefined)?.map((p) => `${p.name} ${p.reason}`).join('; ');
  return why || err.detail || err.title;
}
/** The refusal (a 4xx) of a service call; anything else is thrown on (a 5xx is a bug, not a message). */
export const refusal = (err: unknown): Problem => {
  if (err instanceof Problem && err.status < 500) return err;
  throw err;
};
/** The service's answer, or undefined for a 404 (another entity's object is not found). */
export async function orNotFound<T>(p: Promise<T>): Promise<T | undefined> {
  return p.catch((err: unknown) => {
    if (isProblem(err, PROBLEM_TYPE.notFound)) return undefined;
    throw err;
  });
}

export const statusLabel = (s: string) => s.charAt(0).toUpperCase() + s.slice(1).toLowerCase().replace(/_/g, ' ');

export interface Message { notice?: string | undefined; error?: string | undefined }
export function Messages({ message }: { message?: Message | undefined }): VNode | null {
  if (!message) return null;
  return (
    <>
      {message.notice ? <p class="notice" role="status">{message.notice}</p> : null}
      {message.error ? <div class="error" role="alert">{message.error}</div> : null}
    </>
  );
}

/** A signing secret, shown in this answer only, with a Copy button. */
export function SecretShown({ lead, secret }: { lead: string; secret: string }): VNode {
  return (
    <div class="notice" role="status">
      <p>{lead}</p>
      <label for="new-secret">Signing secret</label><input id="new-secret" readonly value={secret} /> <button type="button" class="secondary" data-copy="new-secret">Copy</button>
    </div>
  );
}
