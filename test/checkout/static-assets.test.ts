// The checkout's scripts and stylesheets as a browser gets them (issue 42, widget ready in
// under 300 ms): compressed as the browser accepts (brotli, else gzip, else as they are),
// with Vary: Accept-Encoding and an ETag per encoding, 304 on If-None-Match; the card
// frame's document carries its script and style (allowed by their CSP hashes), compressed
// the same way, while widget.js (whose address merchants embed) stays at five minutes; the
// checkout's JSON answers are never stored. And the npm package carries every file the
// compiled server reads to serve them.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { createTestApp, type Merchant, type TestApp } from '../helpers/app.ts';
import { BROWSER_SCRIPTS, prebuiltCompressedPath, prebuiltPath } from '../../src/checkout/widget-bundle.ts';
import { PACKAGE_ROOT } from '../../src/platform/paths.ts';

const YEAR = 'public, max-age=31536000, immutable';
const FIVE_MINUTES = 'public, max-age=300';

describe('the checkout\'s scripts and stylesheets: encodings, ETags, caching', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant('Assets shop');
  });
  after(() => t.close());

  const get = (url: string, headers: Record<string, string> = {}) => t.app.inject({ url, headers });

  for (const [url, marker] of [['/checkout/widget.js', 'PaydCheckout'], ['/checkout/card-frame.js', 'cc-number'], ['/checkout/widget.css', '.payd-form']] as const) {
    it(`serves ${url} in brotli, gzip or as it is, each with its own ETag, and 304 for the ETag of that encoding`, async () => {
      const plain = await get(url);
      assert.equal(plain.statusCode, 200);
      assert.equal(plain.headers['content-encoding'], undefined, 'no Accept-Encoding: as it is');
      assert.ok(plain.body.includes(marker));
      const br = await get(url, { 'accept-encoding': 'gzip, deflate, br, zstd' });
      assert.equal(br.headers['content-encoding'], 'br');
      assert.equal(brotliDecompressSync(br.rawPayload).toString(), plain.body);
      assert.ok(br.rawPayload.length < plain.rawPayload.length / 2, `${br.rawPayload.length} of ${plain.rawPayload.length} bytes`);
      const gz = await get(url, { 'accept-encoding': 'gzip, br;q=0' });
      assert.equal(gz.headers['content-encoding'], 'gzip');
      assert.equal(gunzipSync(gz.rawPayload).toString(), plain.body);
      assert.equal((await get(url, { 'accept-encoding': 'identity' })).headers['content-encoding'], undefined);
      assert.equal((await get(url, { 'accept-encoding': '*' })).headers['content-encoding'], 'br');
      for (const res of [plain, br, gz]) assert.match(String(res.headers.vary), /accept-encoding/i, 'caches keep one copy per encoding');
      const etags = new Set([plain, br, gz].map((r) => String(r.headers.etag)));
      assert.equal(etags.size, 3, `one ETag per encoding: ${[...etags].join(' ')}`);

      const again = await get(url, { 'accept-encoding': 'br', 'if-none-match': String(br.headers.etag) });
      assert.equal(again.statusCode, 304);
      assert.equal(again.rawPayload.length, 0);
      assert.equal(again.headers.etag, br.headers.etag);
      assert.match(String(again.headers.vary), /accept-encoding/i);
      assert.equal((await get(url, { 'accept-encoding': 'br', 'if-none-match': `"x", W/${String(br.headers.etag)}` })).statusCode, 304, 'a list, and the weak form');
      const otherEncoding = await get(url, { 'accept-encoding': 'gzip', 'if-none-match': String(br.headers.etag) });
      assert.equal(otherEncoding.statusCode, 200, 'the brotli copy\'s ETag does not stand for the gzip one');
      assert.equal(otherEncoding.headers['content-encoding'], 'gzip');
      assert.equal(plain.headers['cache-control'], FIVE_MINUTES, 'an address without its version: five minutes');
    });
  }

  it('the card frame carries its script and style in its document, allowed by their hashes, compressed as the browser accepts, cacheable', async () => {
    const frame = await get('/checkout/card-frame');
    assert.equal(frame.statusCode, 200);
    assert.equal(frame.headers['content-encoding'], undefined, 'no Accept-Encoding: as it is');
    const script = /<script>([\s\S]*?)<\/script>/.exec(frame.body)?.[1];
    const style = /<style>([\s\S]*?)<\/style>/.exec(frame.body)?.[1];
    assert.ok(script && style, frame.body);
    assert.doesNotMatch(frame.body, /<script src|<link rel="stylesheet"/, 'nothing more to request once the frame has its document');
    assert.equal(script, (await get('/checkout/card-frame.js')).body, 'the card frame\'s script as it is');
    assert.equal(style, (await get('/checkout/card-frame.css')).body);
    const hash = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;
    const policy = String(frame.headers['content-security-policy']);
    assert.ok(policy.includes(`script-src ${hash(script)};`), policy);
    assert.ok(policy.includes(`style-src ${hash(style)};`), policy);
    assert.doesNotMatch(policy, /unsafe-inline|'self'; style|script-src 'self'/);
    // Compressed (the document is the script's size now), brotli else gzip.
    const br = await get('/checkout/card-frame', { 'accept-encoding': 'gzip, deflate, br, zstd' });
    assert.equal(br.headers['content-encoding'], 'br');
    assert.equal(brotliDecompressSync(br.rawPayload).toString(), frame.body);
    assert.ok(br.rawPayload.length < frame.rawPayload.length / 2, `${br.rawPayload.length} of ${frame.rawPayload.length} bytes`);
    const gz = await get('/checkout/card-frame', { 'accept-encoding': 'gzip' });
    assert.equal(gz.headers['content-encoding'], 'gzip');
    assert.equal(gunzipSync(gz.rawPayload).toString(), frame.body);
    for (const res of [frame, br, gz]) {
      assert.match(String(res.headers.vary), /accept-encoding/i, 'caches keep one copy per encoding');
      assert.equal(res.headers['cache-control'], FIVE_MINUTES);
    }
    // The frame's files, still named by a frame document of an earlier version: a year with their version.
    for (const file of ['/checkout/card-frame.js', '/checkout/card-frame.css']) {
      const version = String((await get(file)).headers.etag).replace(/"/g, '');
      assert.equal((await get(`${file}?v=${version}`)).headers['cache-control'], YEAR, file);
      assert.equal((await get(`${file}?v=an-old-version`)).headers['cache-control'], FIVE_MINUTES, 'another version is answered with this one, not kept long');
    }
    // The frame's document is the same for every session (rendered once), only its headers follow the merchant.
    const s = await t.app.inject({ method: 'POST', url: '/v2/client-sessions', headers: m.auth, payload: { amount: 100, currency: 'EUR' } });
    const forSession = await get(`/checkout/card-frame?s=${s.json().id}`);
    assert.equal(forSession.body, frame.body);
    assert.equal(forSession.headers['cache-control'], FIVE_MINUTES);
  });

  it('keeps every checkout JSON answer out of caches (no-store)', async () => {
    const s = (await t.app.inject({ method: 'POST', url: '/v2/client-sessions', headers: m.auth, payload: { amount: 100, currency: 'EUR' } })).json();
    const headers = { 'x-payd-session': s.widget.data, 'accept-encoding': 'br, gzip' };
    const read = await get('/checkout/v1/session', headers);
    assert.equal(read.statusCode, 200);
    assert.equal(read.headers['cache-control'], 'no-store');
    assert.equal(read.headers.etag, undefined);
    const refused = await t.app.inject({ method: 'POST', url: '/checkout/v1/session/payments', headers, payload: { split: [] } });
    assert.ok(refused.statusCode >= 400 && refused.statusCode < 500, refused.body);
    assert.equal(refused.headers['cache-control'], 'no-store', 'a problem');
    const paid = await t.app.inject({
      method: 'POST', url: '/checkout/v1/session/payments', headers,
      payload: { split: [{ partner: 'card-sim', method: 'CARD', amount: 100, instrument: { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2031', cvv: '123' } }] },
    });
    assert.equal(paid.statusCode, 200, paid.body);
    assert.equal(paid.headers['cache-control'], 'no-store', 'a submit\'s outcome');
    const unknown = await get('/checkout/v1/session', { 'x-payd-session': 'bm90LWEtc2Vzc2lvbg' });
    assert.equal(unknown.statusCode, 401);
    assert.equal(unknown.headers['cache-control'], 'no-store', 'a refused read');
  });
});

describe('the npm package', () => {
  /** Whether package.json's "files" takes a path: a folder ("x/"), a path, or a pattern with * (within one folder). */
  const shipped = (file: string) => {
    const { files } = JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { files: string[] };
    return files.some((entry) => (entry.endsWith('/') ? file.startsWith(entry)
      : new RegExp(`^${entry.split('*').map((x) => x.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('[^/]*')}$`).test(file)));
  };

  it('carries every browser script the compiled server serves, with its compressed forms', () => {
    const files = BROWSER_SCRIPTS.flatMap((name) => [prebuiltPath(name), prebuiltCompressedPath(name, 'br'), prebuiltCompressedPath(name, 'gzip')])
      .map((p) => path.relative(PACKAGE_ROOT, p));
    assert.equal(files.length, 6);
    assert.deepEqual(files.filter((f) => !shipped(f)), [], 'left out of package.json "files" (the published server would bundle them with esbuild, which it does not have)');
  });
});
