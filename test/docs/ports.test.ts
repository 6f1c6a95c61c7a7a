// The ports the README and the docs give a newcomer do not collide (issue 43): the example
// shop (`npm run example:shop`, SHOP_PORT) and the webhook receivers of the docs (their
// `.listen(N)`, and `payd listen --forward-to http://localhost:N/...` that feeds them) run
// at the same time while following the README, beside payd itself (PORT 3000). The
// receivers used the shop's 4242, and the second to start failed with EADDRINUSE.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const read = (file: string) => readFileSync(`${root}${file}`, 'utf8');
const DOCS = ['README.md', ...readdirSync(`${root}docs`).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
const CLI = readdirSync(`${root}src/cli`).filter((f) => f.endsWith('.ts')).map((f) => `src/cli/${f}`);

/** Each match of `re` (its first group a port) in each file, as "file: port". */
function ports(files: string[], re: RegExp): Array<{ where: string; port: number }> {
  return files.flatMap((file) => [...read(file).matchAll(re)].map((m) => ({ where: `${file}: ${m[0]}`, port: Number(m[1]) })));
}

describe('the ports of the README walkthrough', () => {
  it('give the docs\' webhook receivers one port, and the example shop another, neither payd\'s', () => {
    const receivers = [
      ...ports(DOCS, /\}\)\.listen\((\d+)\)/g),
      ...ports([...DOCS, ...CLI], /--forward-to[ =]https?:\/\/(?:localhost|127\.0\.0\.1):(\d+)\//g),
      ...ports(['README.md'], /takes them on port (\d+)/g),
    ];
    const shop = [
      ...ports(['examples/checkout-shop/server.ts'], /SHOP_PORT \?\? (\d+)/g),
      ...ports(['README.md'], /`SHOP_PORT`, default (\d+)/g),
      ...ports(['README.md', 'examples/checkout-shop/server.ts'], /https?:\/\/(?:localhost|127\.0\.0\.1):(\d+)\/checkout/g),
    ];
    // What is checked is there: the SDK's and the plain receivers, payd listen in the README, webhooks.md and the CLI.
    assert.ok(receivers.length >= 6, receivers.map((r) => r.where).join('\n'));
    assert.ok(shop.length >= 3, shop.map((r) => r.where).join('\n'));
    const receiverPorts = new Set(receivers.map((r) => r.port));
    const shopPorts = new Set(shop.map((r) => r.port));
    assert.equal(receiverPorts.size, 1, `the receivers listen on several ports:\n${receivers.map((r) => r.where).join('\n')}`);
    assert.equal(shopPorts.size, 1, `the shop is given several ports:\n${shop.map((r) => r.where).join('\n')}`);
    const [receiver] = receiverPorts;
    const [shopPort] = shopPorts;
    assert.notEqual(receiver, shopPort, `the webhook receivers and the example shop both use port ${shopPort}`);
    for (const port of [receiver, shopPort]) assert.notEqual(port, 3000, 'payd listens on 3000 (PORT)');
  });
});
