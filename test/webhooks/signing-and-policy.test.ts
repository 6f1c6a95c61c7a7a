// The merchant-side verification helper, the retry schedule, the SSRF guard and the
// webhook settings.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { createTestApp } from '../helpers/app.ts';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { signWebhook, verifyWebhookSignature } from '../../src/webhooks/index.ts';
import { retryDelayMs } from '../../src/webhooks/backoff.ts';
import { isPrivateAddress } from '../../src/webhooks/target.ts';
import { enqueue, FAST, getEvent, setEndpoint, startReceiver, waitFor } from './helpers.ts';

describe('verifyWebhookSignature', () => {
  const secret = 'whsec_test';
  const body = '{"id":"e1","type":"payment.captured"}';
  const now = 1_700_000_000;
  const v1 = (s: string, t: number, b = body) => createHmac('sha256', s).update(`${t}.${b}`).digest('hex');

  it('accepts a signature made with the secret within the tolerance', () => {
    assert.equal(verifyWebhookSignature(secret, `t=${now},v1=${v1(secret, now)}`, body, 300, now), true);
    assert.equal(verifyWebhookSignature(secret, `t=${now},v1=${v1(secret, now)}`, Buffer.from(body), 300, now + 300), true);
    assert.equal(verifyWebhookSignature(secret, signWebhook([secret], body, now), body, 300, now - 10), true);
    // Any of several v1 values (secret rotation), in any order, with spaces.
    assert.equal(verifyWebhookSignature(secret, `t=${now}, v1=${v1('other', now)}, v1=${v1(secret, now)}`, body, 300, now), true);
  });

  it('refuses wrong secrets, changed bodies, old or future timestamps and malformed headers', () => {
    const good = `t=${now},v1=${v1(secret, now)}`;
    assert.equal(verifyWebhookSignature('whsec_other', good, body, 300, now), false);
    assert.equal(verifyWebhookSignature(secret, good, `${body} `, 300, now), false);
    assert.equal(verifyWebhookSignature(secret, good, body, 300, now + 301), false);
    assert.equal(verifyWebhookSignature(secret, good, body, 300, now - 301), false);
    assert.equal(verifyWebhookSignature(secret, `t=${now + 1},v1=${v1(secret, now)}`, body, 300, now), false);
    for (const header of [undefined, null, '', 'garbage', `v1=${v1(secret, now)}`, `t=${now}`, `t=abc,v1=${v1(secret, now)}`,
      `t=${now},v1=${v1(secret, now).slice(0, 63)}`, `t=${now},v0=${v1(secret, now)}`, `t=${now},v1=${v1(secret, now).toUpperCase()}`]) {
      assert.equal(verifyWebhookSignature(secret, header, body, 300, now), false, String(header));
    }
    assert.equal(verifyWebhookSignature('', `t=${now},v1=${v1('', now)}`, body, 300, now), false);
  });
});

describe('retry schedule', () => {
  it('doubles from the base with at most 25 % jitter, capped', () => {
    for (let attempt = 1; attempt <= 12; attempt++) {
      const nominal = Math.min(60_000 * 2 ** (attempt - 1), 3_600_000);
      for (const r of [0, 0.5, 0.999]) {
        const d = retryDelayMs(attempt, 60_000, 3_600_000, () => r);
        assert.ok(d >= nominal * 0.75 - 1 && d <= Math.min(nominal * 1.25, 3_600_000), `attempt ${attempt}: ${d}`);
      }
    }
  });

  it('keeps retrying for more than 24 hours with the defaults before giving up at 26 hours', () => {
    const maxAge = loadConfig({}).webhookMaxAgeMs;
    assert.equal(maxAge, 26 * 3600_000);
    for (const r of [0, 0.999]) {
      let at = 0;
      let attempts = 1;
      for (;;) {
        const next = at + retryDelayMs(attempts, 60_000, 3_600_000, () => r);
        if (next > maxAge) break;
        at = next;
        attempts++;
      }
      assert.ok(at >= 24 * 3600_000, `last attempt at ${at / 3600_000} h`);
      assert.ok(attempts >= 25 && attempts <= 40, `${attempts} attempts`);
    }
  });
});

describe('SSRF guard', () => {
  it('classifies addresses', () => {
    for (const a of ['127.0.0.1', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0',
      '224.0.0.1', '255.255.255.255', '::1', '::', 'fd00::1', 'fe80::1', '::ffff:127.0.0.1', '::ffff:10.0.0.1', '64:ff9b::a00:1', 'not-an-ip']) {
      assert.equal(isPrivateAddress(a), true, a);
    }
    for (const a of ['8.8.8.8', '1.1.1.1', '172.32.0.1', '2001:4860:4860::8888', '::ffff:8.8.8.8']) assert.equal(isPrivateAddress(a), false, a);
  });

  it('refuses loopback targets when private targets are not allowed: the receiver is never called', async () => {
    const t = await createTestApp({ ...FAST, webhookAllowPrivateTargets: false });
    const rx = await startReceiver();
    try {
      t.app.webhooks.dispatcher.start();
      const m = await t.createMerchant();
      const port = new URL(rx.url).port;
      await setEndpoint(t, m.entityId, `http://localhost:${port}/hook`);
      const viaName = await enqueue(t.testDb.db, { entityId: m.entityId, type: 'payment.captured', data: {} });
      const viaIp = await enqueue(t.testDb.db, { entityId: m.entityId, type: 'payment_link.paid', data: {}, url: `${rx.url}/link` });
      for (const id of [viaName.id, viaIp.id]) {
        const e = await waitFor(async () => {
          const ev = await getEvent(t, m.entityId, id);
          return ev.deliveries[0].attempts.length >= 2 ? ev : undefined;
        });
        assert.equal(e.status, 'PENDING');
        assert.match(e.deliveries[0].attempts[0].error, /^refused: .* non-public address (127\.0\.0\.1|::1)/);
      }
      assert.equal(rx.requests.length, 0);
    } finally {
      await t.close();
      await rx.close();
    }
  });
});

describe('webhook settings', () => {
  it('allow private targets on the embedded database only, unless set', () => {
    assert.equal(loadConfig({}).webhookAllowPrivateTargets, true);
    assert.equal(loadConfig({ DATABASE_URL: 'postgres://db/payd' }).webhookAllowPrivateTargets, false);
    assert.equal(loadConfig({ DATABASE_URL: 'postgres://db/payd', PAYD_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' }).webhookAllowPrivateTargets, true);
  });

  it('read the intervals and refuse bad values', () => {
    const c = loadConfig({ PAYD_WEBHOOK_BACKOFF_BASE_MS: '500', PAYD_WEBHOOK_MAX_AGE_HOURS: '30', PAYD_WEBHOOK_POLL_MS: '250', PAYD_WEBHOOK_TIMEOUT_MS: '2000' });
    assert.deepEqual([c.webhookBackoffBaseMs, c.webhookMaxAgeMs, c.webhookPollMs, c.webhookTimeoutMs], [500, 30 * 3600_000, 250, 2000]);
    assert.throws(() => loadConfig({ PAYD_WEBHOOK_TIMEOUT_MS: '30000', PAYD_WEBHOOK_LEASE_MS: '20000' }), ConfigError);
    assert.throws(() => loadConfig({ PAYD_WEBHOOK_MAX_AGE_HOURS: '0' }), ConfigError);
    assert.throws(() => loadConfig({ PAYD_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'maybe' }), ConfigError);
  });
});
