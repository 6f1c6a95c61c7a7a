// Debian's Chromium, headless, for the browser tests (test/e2e): the flags the machine
// needs (its closed network refuses background connections; no sandbox as root); the checks
// the dashboard's page tests make of every page (axe, no sideways scroll).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { type Browser, type Frame, type Page, chromium } from 'playwright-core';

export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/**
 * axe-core on the page: no violation at all, whatever its impact (the page's context needs
 * bypassCSP to take the script). The page's frames (a card frame, a 3-D Secure modal's
 * frame, of other origins) are audited as parts of the page, as axe does: axe in each, run
 * from the top, so that the page-level rules (one main landmark, a first-level heading,
 * content in landmarks) are the page's, and every frame's content is checked.
 */
export async function assertNoAxeViolations(page: Page, name: string): Promise<void> {
  const frames: Frame[] = [];
  const walk = (f: Frame) => {
    if (f === page.mainFrame() || f.url().startsWith('http')) frames.push(f);
    f.childFrames().forEach(walk);
  };
  walk(page.mainFrame());
  for (const frame of frames.reverse()) {
    await frame.addScriptTag({ content: axeSource });
    // axe talks to frames of another origin only when told to.
    await frame.evaluate(() => (window as unknown as { axe: { configure: (o: unknown) => void } }).axe.configure({ allowedOrigins: ['<unsafe_all_origins>'] }));
  }
  const violations = await page.evaluate(async () => {
    const result = await (window as unknown as { axe: { run: () => Promise<{ violations: Array<{ id: string; impact: string; nodes: Array<{ target: unknown }> }> }> } }).axe.run();
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, targets: v.nodes.map((n) => n.target) }));
  });
  assert.deepEqual(violations, [], `${name}: ${JSON.stringify(violations)}`);
}

/** The page is no wider than `width`; the message names what sticks out, outside the regions that scroll on their own (.table-wrap, nav). */
export async function assertNoSidewaysScroll(page: Page, name: string, width: number): Promise<void> {
  const scrollWidth = await page.evaluate(() => document.documentElement.scrollWidth);
  const wide = scrollWidth <= width ? [] : await page.evaluate((w) => Array.from(document.querySelectorAll('body *'))
    .filter((el) => el.getBoundingClientRect().right > w && !el.closest('.table-wrap, nav'))
    .slice(0, 10).map((el) => `${el.tagName}.${el.className}: ${Math.round(el.getBoundingClientRect().right)} px`), width);
  assert.ok(scrollWidth <= width, `${name} at ${width} px is ${scrollWidth} px wide: ${JSON.stringify(wide)}`);
}
