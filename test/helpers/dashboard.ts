// The dashboard tests' set-up, in one place: an app at a localhost base URL, its team
// members through the operator API, a browser's sign-in through payd's identity provider
// (the dashboard's cookie back), GET/POST of pages with that cookie, and a form's hidden
// fields (its CSRF token among them).
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import type { Config } from '../../src/config.ts';
import { createTestApp, type TestApp } from './app.ts';
import { createUser, hiddenFields, PASSWORD, signIn } from '../identity/idp-helpers.ts';

/** A test app for the dashboard. (http redirect URIs are allowed on localhost only: the dashboard's callback is one.) */
export const createDashboardApp = (overrides: Partial<Config> = {}) => createTestApp({ ...overrides, baseUrl: 'http://localhost:8080' });

/** A user's membership: the entity, the user's email, the role. */
export type Membership = readonly [entity: { entityId: string }, email: string, role: 'admin' | 'operator' | 'viewer'];

/** Adds each user (who exists) to the entity's team with the role, through the operator API. */
export async function addMembers(t: TestApp, members: readonly Membership[]): Promise<void> {
  for (const [entity, email, role] of members) {
    const res = await t.app.inject({ method: 'POST', url: `/admin/v1/entities/${entity.entityId}/members`, headers: t.adminHeaders, payload: { email, role } });
    assert.equal(res.statusCode, 201, res.body);
  }
}

/** Creates each user, then adds them to the entity's team, one member after the other. */
export async function createMembers(t: TestApp, members: readonly Membership[]): Promise<void> {
  for (const member of members) {
    await createUser(t, member[1]);
    await addMembers(t, [member]);
  }
}

export const cookieValue = (res: LightMyRequestResponse, name: string) =>
  ([] as string[]).concat(res.headers['set-cookie'] ?? []).find((c) => c.startsWith(`${name}=`))?.split(';')[0];

/** The hidden fields (the CSRF token among them) of the first form in `html` whose action ends with `action`. */
export const formOf = (html: string, action: RegExp) => Object.fromEntries(hiddenFields(new RegExp(`<form method="post" action="[^"]*${action.source}"[^]*?</form>`).exec(html)![0]));

/** `app` is read at each call (the app is made in a `before` hook). */
export function dashboardClient(app: () => TestApp) {
  /** Signs in through the provider, as a browser does; returns the dashboard cookie. */
  async function signInAs(email: string, path = '/dashboard', password = PASSWORD): Promise<string> {
    const t = app();
    const start = await t.app.inject({ url: path });
    assert.equal(start.statusCode, 303);
    const login = cookieValue(start, 'payd_dashboard_login')!;
    const authorize = new URL(String(start.headers.location));
    const posted = await signIn(t.app, `${authorize.pathname}${authorize.search}`, { email, password });
    assert.equal(posted.statusCode, 303, posted.body);
    const back = new URL(String(posted.headers.location));
    const cb = await t.app.inject({ url: `${back.pathname}${back.search}`, headers: { cookie: login } });
    assert.equal(cb.statusCode, 303, cb.body);
    assert.equal(cb.headers.location, path);
    return cookieValue(cb, 'payd_dashboard')!;
  }
  const get = (cookie: string, url: string) => app().app.inject({ url, headers: { cookie } });
  /** Posts a form: its fields as an object, or as pairs where a name repeats. */
  const post = (cookie: string, url: string, form: Record<string, string> | Array<[string, string]>) =>
    app().app.inject({ method: 'POST', url, headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, payload: new URLSearchParams(form).toString() });
  return { signInAs, get, post };
}
