// src/web: pages escape by default, one signed cookie, one session format, CSRF bound to the session.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Fastify from 'fastify';
import formbody from '@fastify/formbody';
import { CsrfField, Document, TrustedHtml, csp, cspHash, csrfToken, csrfValid, readSession, render, sendHtml, startSession, webCookies } from '../../src/web/index.ts';
import { createHash } from 'node:crypto';

const KEY = Buffer.alloc(32, 7);
const SESSION = { name: 'payd_test', path: '/', secure: false };

async function testApp() {
  const app = Fastify();
  await app.register(formbody);
  await app.register(webCookies, { secret: Buffer.alloc(32, 1) });
  app.get('/page', async (request, reply) => {
    const name = String((request.query as Record<string, string>).name ?? '');
    return sendHtml(reply, 200, (
      <Document title={name} stylesheets={['/a.css']}>
        <main><h1>{name}</h1><a href={`/x?name=${name}`} title={name}>link</a><TrustedHtml html="<b>payd's own</b>" /></main>
      </Document>), { csp: csp() });
  });
  app.get('/login', async (_request, reply) => {
    startSession(reply, SESSION, { sub: 'user-1', sid: 'sid-1', ttlSeconds: 60 });
    return reply.send('ok');
  });
  app.get('/form', async (request, reply) => {
    const s = readSession(request, SESSION);
    if (!s) return reply.code(401).send('no session');
    return sendHtml(reply, 200, <Document title="Form" stylesheets={[]}><form method="post"><CsrfField token={csrfToken(KEY, s.raw)} /></form></Document>, { csp: csp() });
  });
  app.post('/form', async (request, reply) => {
    const s = readSession(request, SESSION);
    return reply.code(s && csrfValid(request, KEY, s.raw) ? 200 : 403).send(s?.sub ?? '');
  });
  return app;
}

describe('the web layer (src/web)', () => {
  it('escapes every text and attribute value by default; TrustedHtml is the one way to put HTML in', async () => {
    const app = await testApp();
    const hostile = `<script>alert(1)</script>" onmouseover="x`;
    const res = await app.inject({ url: `/page?name=${encodeURIComponent(hostile)}` });
    assert.equal(res.statusCode, 200);
    assert.ok(res.body.startsWith('<!doctype html>\n<html lang="en">'));
    assert.doesNotMatch(res.body, /<script>alert/);
    assert.doesNotMatch(res.body, /" onmouseover="/);
    assert.match(res.body, /<h1>&lt;script>alert\(1\)&lt;\/script>&quot; onmouseover=&quot;x<\/h1>/);
    assert.match(res.body, /<b>payd's own<\/b>/);
    assert.equal(res.headers['content-security-policy'], "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'");
    assert.equal(res.headers['x-frame-options'], 'DENY');
    assert.equal(res.headers['cache-control'], 'no-store');
    await app.close();
  });

  it('a page\'s own inline script and style are written as they are and allowed by their hashes alone; one that could end its element is refused', () => {
    const script = 'if (1 < 2 && "a" > "b") document.title = "&amp;";';
    const style = 'body > p { content: "<"; }';
    const html = render(<Document title="Inline" stylesheets={[]} inlineStyle={style} inlineBodyScript={script} />);
    assert.ok(html.includes(`<style>${style}</style>`), html);
    assert.ok(html.includes(`<script>${script}</script></body>`), html);
    const sha = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;
    assert.equal(cspHash(script), sha(script));
    assert.equal(csp({ inlineHashes: { scripts: [cspHash(script)], styles: [cspHash(style)] } }),
      `default-src 'none'; script-src ${sha(script)}; style-src ${sha(style)}; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'`);
    for (const bad of ['x = "</script>"', 'x = "</SCRIPT "', 'x = 1 <!-- 2']) {
      assert.throws(() => render(<Document title="Inline" stylesheets={[]} inlineBodyScript={bad} />), /inline script/);
    }
    assert.throws(() => render(<Document title="Inline" stylesheets={[]} inlineStyle="p{}</style><script>x()</script>" />), /inline style/);
  });

  it('a session is a signed cookie: a changed one, a forged one or none is no session; the CSRF token is bound to it', async () => {
    const app = await testApp();
    const login = await app.inject({ url: '/login' });
    const setCookie = String(login.headers['set-cookie']);
    assert.match(setCookie, /^payd_test=user-1\.\d+\.sid-1\.[^;]+; Path=\/; HttpOnly; SameSite=Lax$/);
    const cookie = setCookie.split(';')[0]!;
    const form = await app.inject({ url: '/form', headers: { cookie } });
    assert.equal(form.statusCode, 200);
    const token = /name="csrf" value="([^"]+)"/.exec(form.body)![1]!;
    const post = (c: string, csrf: string) => app.inject({ method: 'POST', url: '/form', headers: { cookie: c, 'content-type': 'application/x-www-form-urlencoded' }, payload: new URLSearchParams({ csrf }).toString() });
    assert.equal((await post(cookie, token)).body, 'user-1');
    assert.equal((await post(cookie, 'x'.repeat(token.length))).statusCode, 403, 'a wrong token');
    assert.equal((await post(cookie, '')).statusCode, 403, 'no token');
    const forged = cookie.replace('user-1', 'user-2');
    assert.equal((await app.inject({ url: '/form', headers: { cookie: forged } })).statusCode, 401, 'a changed cookie is no session');
    assert.equal((await app.inject({ url: '/form', headers: { cookie: 'payd_test=user-1.9999999999.sid-1' } })).statusCode, 401, 'an unsigned cookie is no session');
    await app.close();
  });

  it('an expired session is no session', async () => {
    const app = Fastify();
    await app.register(webCookies, { secret: Buffer.alloc(32, 1) });
    app.get('/old', async (_r, reply) => {
      startSession(reply, SESSION, { sub: 'u', sid: 's', ttlSeconds: 60, now: Date.now() - 120_000 });
      return reply.send('ok');
    });
    app.get('/who', async (request, reply) => reply.send(readSession(request, SESSION)?.sub ?? 'nobody'));
    const cookie = String((await app.inject({ url: '/old' })).headers['set-cookie']).split(';')[0]!;
    assert.equal((await app.inject({ url: '/who', headers: { cookie } })).body, 'nobody');
    await app.close();
  });
});
