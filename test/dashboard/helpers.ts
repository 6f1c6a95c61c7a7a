// Shared by the dashboard tests: a browser's sign-in through payd's identity provider (the
// dashboard's cookie back), and GET/POST of pages with that cookie.
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import type { TestApp } from '../helpers/app.ts';
import { PASSWORD, signIn } from '../identity/idp-helpers.ts';

export const cookieValue = (res: LightMyRequestResponse, name: string) =>
  ([] as string[]).concat(res.headers['set-cookie'] ?? []).find((c) => c.startsWith(`${name}=`))?.split(';')[0];

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
  const post = (cookie: string, url: string, form: Record<string, string>) =>
    app().app.inject({ method: 'POST', url, headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, payload: new URLSearchParams(form).toString() });
  return { signInAs, get, post };
}
