// Widget ready-time bench (issue 42): how long a shopper waits, on a merchant page of
// another site, from the navigation to a card field they can type in (the card frame of
// payd's origin built inside the widget), cold (empty browser cache) and warm (widget.js,
// the frame and its script cached: max-age 300). payd runs from dist/ (`payd start`,
// embedded database) on 127.0.0.1 as http://pay.example, the merchant page as
// http://shop.test (Chromium's --host-resolver-rules); headless Chromium at /usr/bin/chromium.
// Also prints the gzipped sizes of widget.js and card-frame.js as served.
//
//   node --import tsx bench/widget-ready.ts     (BENCH_WIDGET_RUNS, default 7)
import { spawn } from 'node:child_process';
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { chromium } from 'playwright-core';
import { COMPILED_ONLY, freePort } from './proc.ts';

const runs = Math.max(1, Number(process.env.BENCH_WIDGET_RUNS ?? 7));
const ADMIN = 'bench-admin-token-0123456789';
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const dir = mkdtempSync(path.join(os.tmpdir(), 'payd-widget-bench-'));
const port = await freePort();
const payd = `http://pay.example:${port}`;
const local = `http://127.0.0.1:${port}`;
const child = spawn(process.execPath, ['bin/payd.js', 'start'], {
  env: {
    PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'warn', PAYD_DEMO: '0', PAYD_DATA_DIR: dir,
    PAYD_BASE_URL: payd, PAYD_ADMIN_TOKEN: ADMIN, PAYD_MASTER_KEY: Buffer.alloc(32, 7).toString('base64'), ...COMPILED_ONLY,
  },
  stdio: ['ignore', 'ignore', 'inherit'],
});
let shop: http.Server | undefined;
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', `--host-resolver-rules=MAP pay.example 127.0.0.1, MAP shop.test 127.0.0.1`],
});
try {
  for (let i = 0; ; i++) {
    if (await fetch(`${local}/healthz`).then((r) => r.ok, () => false)) break;
    if (i > 1800) throw new Error('payd did not start (npm run build?)');
    await new Promise((r) => setTimeout(r, 100));
  }
  const admin = { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' };
  const entity = await (await fetch(`${local}/admin/v1/entities`, { method: 'POST', headers: admin, body: JSON.stringify({ name: 'Bench shop' }) })).json() as { id: string };
  const key = await (await fetch(`${local}/admin/v1/entities/${entity.id}/api-keys`, { method: 'POST', headers: admin, body: '{}' })).json() as { api_key: string };
  const token = (await (await fetch(`${local}/oauth/token`, {
    method: 'POST', headers: { 'x-api-key': key.api_key, 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=client_credentials',
  })).json() as { access_token: string }).access_token;

  shop = http.createServer(async (_req, res) => {
    const s = await (await fetch(`${local}/v2/client-sessions`, {
      method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ amount: 2500, currency: 'EUR' }),
    })).json() as { widget: { data: string } };
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(`<!doctype html><html lang="en"><title>Shop</title><main><div id="pay"></div></main><script src="${payd}/checkout/widget.js"></script>
<script>PaydCheckout.mount('#pay', { data: ${JSON.stringify(s.widget.data)} });</script>`);
  });
  await new Promise<void>((r) => shop!.listen(0, '127.0.0.1', r));
  const shopUrl = `http://shop.test:${(shop.address() as AddressInfo).port}/checkout`;

  const sizes = await Promise.all(['widget.js', 'card-frame.js'].map(async (f) => `${f} ${gzipSync(Buffer.from(await (await fetch(`${local}/checkout/${f}`)).arrayBuffer())).length} bytes gzipped`));
  const time = async (context: Awaited<ReturnType<typeof browser.newContext>>) => {
    const page = await context.newPage();
    const started = performance.now();
    await page.goto(shopUrl, { waitUntil: 'commit' });
    await page.frameLocator('iframe.payd-frame').getByLabel('Card number', { exact: true }).waitFor();
    const ms = performance.now() - started;
    await page.close();
    return ms;
  };
  const cold: number[] = [];
  const warm: number[] = [];
  for (let i = 0; i < runs; i++) {
    const context = await browser.newContext();
    cold.push(await time(context));
    warm.push(await time(context));
    await context.close();
  }
  console.log(`\nwidget ready: navigation to a card field to type in, merchant page on another site, ${runs} run(s); load average ${os.loadavg()[0]!.toFixed(1)} on ${os.availableParallelism()} CPUs`);
  console.log(`  cold cache  ${median(cold).toFixed(0).padStart(5)} ms median (fastest ${Math.min(...cold).toFixed(0)})`);
  console.log(`  warm cache  ${median(warm).toFixed(0).padStart(5)} ms median (fastest ${Math.min(...warm).toFixed(0)})`);
  console.log(`  ${sizes.join(', ')}`);
} finally {
  await browser.close();
  shop?.close();
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  rmSync(dir, { recursive: true, force: true });
}
