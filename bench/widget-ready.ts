// Widget ready-time bench (issue 42): how long a shopper waits, on a merchant page of
// another site, from the navigation to a card field they can type in (the card frame of
// payd's origin built inside the widget), cold (empty browser cache) and warm (a second
// page of the same browser context: what the first left in the cache). payd runs from
// dist/ (`payd start`, embedded database) on 127.0.0.1 as http://pay.example, the merchant
// page as http://shop.test (Chromium's --host-resolver-rules); headless Chromium at
// /usr/bin/chromium.
//
// "Ready" twice: as Playwright sees it (from page.goto to the card field found typeable
// through the DevTools protocol, the driver's own polling into the frame included) and
// the widget's own onReady signal, on the page's clock from the navigation's start (what
// a merchant's onReady sees; a widget without onReady prints none).
// Besides the totals, it prints where the time goes, from the browser's own timings
// (Navigation, Resource and Paint Timing of the page and of the card frame, put on the
// page's clock): the merchant page, widget.js, the session read, the card frame's
// document, its script, and the first paint of the card fields in the frame. It also
// prints the sizes of widget.js, the card frame's document and card-frame.js as served
// (gzip and brotli, or gzipped here when the server sends them uncompressed).
//
//   node --import tsx bench/widget-ready.ts     (BENCH_WIDGET_RUNS, default 7)
//   BENCH_WIDGET_AGAINST=/path/to/other/checkout (built) also times that checkout's payd,
//   alternating with this one run by run on the same browser, and prints both.
//   BENCH_WIDGET_LATENCY=ms (and BENCH_WIDGET_KBPS, download kilobits a second) puts
//   Chromium's network emulation on every page: a shopper's network rather than loopback,
//   where a request's round trip, not the host's CPU, is what is waited for.
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { type BrowserContext, type Frame, chromium } from 'playwright-core';
import { COMPILED_ONLY, freePort } from './proc.ts';

const runs = Math.max(1, Number(process.env.BENCH_WIDGET_RUNS ?? 7));
const against = process.env.BENCH_WIDGET_AGAINST;
const latency = Number(process.env.BENCH_WIDGET_LATENCY ?? 0);
const kbps = Number(process.env.BENCH_WIDGET_KBPS ?? 0);
const ADMIN = 'bench-admin-token-0123456789';
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

interface Payd { label: string; child: ChildProcess; dir: string; local: string; shop: http.Server; shopUrl: string }

async function startPayd(label: string, checkout: string): Promise<Payd> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'payd-widget-bench-'));
  const port = await freePort();
  const payd = `http://pay.example:${port}`;
  const local = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, ['bin/payd.js', 'start'], {
    cwd: checkout,
    env: {
      PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'warn', PAYD_DEMO: '0', PAYD_DATA_DIR: dir,
      PAYD_BASE_URL: payd, PAYD_ADMIN_TOKEN: ADMIN, PAYD_MASTER_KEY: Buffer.alloc(32, 7).toString('base64'), ...COMPILED_ONLY,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  for (let i = 0; ; i++) {
    if (await fetch(`${local}/healthz`).then((r) => r.ok, () => false)) break;
    if (i > 1800 || child.exitCode !== null) throw new Error(`payd of ${checkout} did not start (npm run build?)`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const admin = { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' };
  const entity = await (await fetch(`${local}/admin/v1/entities`, { method: 'POST', headers: admin, body: JSON.stringify({ name: 'Bench shop' }) })).json() as { id: string };
  const key = await (await fetch(`${local}/admin/v1/entities/${entity.id}/api-keys`, { method: 'POST', headers: admin, body: '{}' })).json() as { api_key: string };
  const token = (await (await fetch(`${local}/oauth/token`, {
    method: 'POST', headers: { 'x-api-key': key.api_key, 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=client_credentials',
  })).json() as { access_token: string }).access_token;
  const shop = http.createServer(async (_req, res) => {
    const s = await (await fetch(`${local}/v2/client-sessions`, {
      method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ amount: 2500, currency: 'EUR' }),
    })).json() as { widget: { data: string } };
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(`<!doctype html><html lang="en"><title>Shop</title><main><div id="pay"></div></main><script src="${payd}/checkout/widget.js"></script>
<script>PaydCheckout.mount('#pay', { data: ${JSON.stringify(s.widget.data)}, onReady: function () { performance.mark('payd:onready'); } });</script>`);
  });
  await new Promise<void>((r) => shop.listen(0, '127.0.0.1', r));
  return { label, child, dir, local, shop, shopUrl: `http://shop.test:${(shop.address() as AddressInfo).port}/checkout` };
}

async function stopPayd(p: Payd) {
  p.shop.close();
  p.child.kill('SIGTERM');
  if (p.child.exitCode === null) await new Promise((r) => p.child.once('exit', r));
  rmSync(p.dir, { recursive: true, force: true });
}

/** A file's size as served (a script, or the card frame's document): the encoded body for gzip and for br, or the body gzipped here when served as is. */
async function servedSizes(local: string, file: string): Promise<string> {
  const get = (encoding: string) => new Promise<{ enc: string; bytes: Buffer }>((resolve, reject) => {
    http.get(`${local}/checkout/${file}`, { headers: { 'accept-encoding': encoding } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c)).on('end', () => resolve({ enc: String(res.headers['content-encoding'] ?? ''), bytes: Buffer.concat(chunks) }));
    }).on('error', reject);
  });
  const gz = await get('gzip');
  const br = await get('br');
  const gzBytes = gz.enc === 'gzip' ? gz.bytes.length : gzipSync(gz.bytes).length;
  return `${file} ${gzBytes} B gzip${gz.enc === 'gzip' ? '' : ' (gzipped here)'}${br.enc === 'br' ? `, ${br.bytes.length} B br` : ''}`;
}

/** Phases, each [start, end] in ms from the navigation's start, on the page's clock. */
type Phases = Record<string, [number, number]>;
const PHASES = ['merchant page', 'widget.js', 'widget.css', 'session read', 'card frame document', 'card-frame.js', 'card-frame.css',
  'card frame DOMContentLoaded', 'payd:init reaches the frame', 'card fields painted', 'widget onReady'] as const;

/** Run in every frame before its scripts: marks when the widget's payd:init reaches the card frame (the bench's own listener, first). */
const MARK_INIT = () => {
  window.addEventListener('message', (event) => {
    if ((event.data as { type?: string } | null)?.type === 'payd:init') performance.mark('payd:init-received');
  }, true);
};

async function breakdown(page: Awaited<ReturnType<BrowserContext['newPage']>>, frame: Frame): Promise<Phases> {
  const resources = () => ({
    origin: performance.timeOrigin,
    nav: (performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming).toJSON() as Record<string, number>,
    res: (performance.getEntriesByType('resource') as PerformanceResourceTiming[]).map((e) => ({ name: e.name, start: e.startTime, end: e.responseEnd })),
    paint: [...performance.getEntriesByType('paint'), ...performance.getEntriesByType('mark')].map((e) => ({ name: e.name, start: e.startTime })),
  });
  const p = await page.evaluate(resources);
  const f = await frame.evaluate(resources);
  const shift = f.origin - p.origin;
  const find = (list: typeof p.res, part: string) => list.find((e) => e.name.includes(part));
  const out: Phases = {};
  out['merchant page'] = [0, p.nav.responseEnd!];
  const w = find(p.res, '/checkout/widget.js');
  if (w) out['widget.js'] = [w.start, w.end];
  const s = find(p.res, '/checkout/v1/session');
  if (s) out['session read'] = [s.start, s.end];
  const wc = find(p.res, '/checkout/widget.css');
  if (wc) out['widget.css'] = [wc.start, wc.end];
  out['card frame document'] = [shift, shift + f.nav.responseEnd!];
  const cf = find(f.res, '/checkout/card-frame.js');
  if (cf) out['card-frame.js'] = [shift + cf.start, shift + cf.end];
  const cc = find(f.res, '/checkout/card-frame.css');
  if (cc) out['card-frame.css'] = [shift + cc.start, shift + cc.end];
  out['card frame DOMContentLoaded'] = [shift + f.nav.domContentLoadedEventStart!, shift + f.nav.domContentLoadedEventEnd!];
  const init = f.paint.find((e) => e.name === 'payd:init-received');
  if (init) out['payd:init reaches the frame'] = [shift + init.start, shift + init.start];
  const fcp = f.paint.find((e) => e.name === 'first-contentful-paint');
  if (fcp) out['card fields painted'] = [shift + fcp.start, shift + fcp.start];
  const ready = p.paint.find((e) => e.name === 'payd:onready');
  if (ready) out['widget onReady'] = [ready.start, ready.start];
  return out;
}

interface Sample { ms: number; phases: Phases }

async function time(context: BrowserContext, p: Payd): Promise<Sample> {
  const page = await context.newPage();
  await page.addInitScript(MARK_INIT);
  if (latency || kbps) {
    const cdp = await context.newCDPSession(page);
    const throughput = kbps ? (kbps * 1000) / 8 : -1;
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency, downloadThroughput: throughput, uploadThroughput: throughput });
  }
  const started = performance.now();
  await page.goto(p.shopUrl, { waitUntil: 'commit' });
  // A field to type in: in the frame, and the widget's form shown on the page (not hidden, not inert: the frame may
  // write its fields while the widget keeps the form out of sight and reach).
  await Promise.all([page.frameLocator('iframe.payd-frame').getByLabel('Card number', { exact: true }).waitFor(), page.locator('form.payd-form:not([inert])').waitFor()]);
  const ms = performance.now() - started;
  // The widget's own signal (onReady, on the page's clock), for a widget that has it.
  await page.waitForFunction(() => performance.getEntriesByName('payd:onready').length > 0, null, { timeout: 2000 }).catch(() => undefined);
  const frame = page.frames().find((f) => f.url().includes('/checkout/card-frame'))!;
  const phases = await breakdown(page, frame);
  await page.close();
  return { ms, phases };
}

function report(p: Payd, cold: Sample[], warm: Sample[]) {
  const line = (name: string, xs: Sample[]) => `  ${name}  ${median(xs.map((x) => x.ms)).toFixed(0).padStart(5)} ms median (fastest ${Math.min(...xs.map((x) => x.ms)).toFixed(0)})`;
  const onReady = (xs: Sample[]) => {
    const at = xs.map((x) => x.phases['widget onReady']?.[0]).filter((x): x is number => x !== undefined);
    return at.length ? `${median(at).toFixed(0).padStart(5)} ms median (fastest ${Math.min(...at).toFixed(0)}, ${at.length} runs)` : '    - (no onReady in this widget)';
  };
  console.log(`${p.label}:`);
  console.log('  ready as Playwright sees it (the bench\'s clock: navigation to the card field found typeable by the test driver)');
  console.log(line('cold cache', cold));
  console.log(line('warm cache', warm));
  console.log('  the widget\'s onReady (the page\'s clock: navigation start to the widget\'s own signal, what a merchant sees)');
  console.log(`    cold cache  ${onReady(cold)}`);
  console.log(`    warm cache  ${onReady(warm)}`);
  const span = (xs: Sample[], phase: string) => {
    const have = xs.map((x) => x.phases[phase]).filter((x): x is [number, number] => !!x);
    if (!have.length) return '-'.padStart(15);
    return `${median(have.map((x) => x[0])).toFixed(0).padStart(5)} – ${median(have.map((x) => x[1])).toFixed(0).padStart(5)}`.padStart(15);
  };
  console.log(`  ${'where the time goes (median start – end, ms)'.padEnd(44)} ${'cold'.padStart(15)} ${'warm'.padStart(15)}`);
  for (const phase of PHASES) console.log(`    ${phase.padEnd(42)} ${span(cold, phase)} ${span(warm, phase)}`);
}

const builds: Payd[] = [];
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', `--host-resolver-rules=MAP pay.example 127.0.0.1, MAP shop.test 127.0.0.1`],
});
try {
  builds.push(await startPayd(against ? `this checkout (${process.cwd()})` : 'payd', process.cwd()));
  if (against) builds.push(await startPayd(`against (${path.resolve(against)})`, path.resolve(against)));
  const samples = builds.map(() => ({ cold: [] as Sample[], warm: [] as Sample[] }));
  for (let i = 0; i < runs; i++) {
    // Alternate which build goes first, so that neither always follows the other.
    const order = i % 2 === 0 ? builds.map((_, j) => j) : builds.map((_, j) => j).reverse();
    for (const j of order) {
      const context = await browser.newContext();
      samples[j]!.cold.push(await time(context, builds[j]!));
      samples[j]!.warm.push(await time(context, builds[j]!));
      await context.close();
    }
  }
  const network = latency || kbps ? `; emulated network: ${latency} ms latency${kbps ? `, ${kbps} kbit/s` : ''}` : '';
  console.log(`\nwidget ready: navigation to a card field to type in, merchant page on another site, ${runs} run(s); load average ${os.loadavg()[0]!.toFixed(1)} on ${os.availableParallelism()} CPUs${network}`);
  if (builds.length === 2) {
    // Run by run (the two builds' runs of one round saw about the same load): this build's time minus the other's.
    console.log('paired, run by run, this checkout minus against (median difference; runs where this one was sooner):');
    for (const cache of ['cold', 'warm'] as const) {
      const a = samples[0]![cache];
      const b = samples[1]![cache];
      const paired = (of: (x: Sample) => number | undefined) => {
        const d = a.map((x, i) => [of(x), of(b[i]!)]).filter((p): p is [number, number] => p[0] !== undefined && p[1] !== undefined).map(([x, y]) => x - y);
        return d.length ? `${median(d) > 0 ? '+' : ''}${median(d).toFixed(0)} ms (${d.filter((x) => x < 0).length} of ${d.length})` : '-';
      };
      console.log(`  ${cache}: card fields painted ${paired((x) => x.phases['card fields painted']?.[0])}; ready as Playwright sees it ${paired((x) => x.ms)}`);
    }
  }
  for (const [j, b] of builds.entries()) {
    report(b, samples[j]!.cold, samples[j]!.warm);
    console.log(`  ${(await Promise.all(['widget.js', 'card-frame', 'card-frame.js'].map((f) => servedSizes(b.local, f)))).join('; ')}`);
  }
} finally {
  await browser.close();
  for (const b of builds) await stopPayd(b);
}
