// Ids typed in upper case (UUIDs are case-insensitive) reach the same object as the
// canonical lower-case id, and never end up as associated data of a sealed secret
// (payd issue 12, item 8: an upper-case id corrupted the entity's webhook secret).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { expectProblem, MASTER_KEY, type TestApp } from '../helpers/app.ts';
import { encrypt, generateSecret } from '../../src/platform/crypto/secrets.ts';
import { verifyWebhookSignature } from '../../src/webhooks/index.ts';
import { enqueue, type Receiver, secretOf, settled, startWebhookApp, stopWebhookApp } from '../webhooks/helpers.ts';

describe('upper-case ids in operator and merchant paths', () => {
  let t: TestApp;
  let rx: Receiver;
  before(async () => ({ t, rx } = await startWebhookApp()));
  after(() => stopWebhookApp({ t, rx }));
  const up = (id: string) => id.toUpperCase();

  it('reveals, rotates and signs with a secret first asked for with an upper-case id', async () => {
    const m = await t.createMerchant();
    const first = await t.app.inject({ url: `/admin/v1/entities/${up(m.entityId)}/webhook-secret`, headers: t.adminHeaders });
    assert.equal(first.statusCode, 200, first.body);
    assert.equal(first.json().entity_id, m.entityId, 'the canonical id comes back');
    const secret = first.json().secret as string;
    assert.equal(await secretOf(t.app, t.adminHeaders, m.entityId), secret, 'the lower-case path opens the same secret');

    const put = await t.app.inject({
      method: 'PUT', url: `/admin/v1/entities/${up(m.entityId)}/webhook-endpoint`, headers: t.adminHeaders, payload: { url: rx.url },
    });
    assert.equal(put.statusCode, 200, put.body);
    assert.equal(put.json().entity_id, m.entityId);
    const { id } = await enqueue(t.testDb.db, { entityId: m.entityId, type: 'payment.captured', data: {} });
    const done = await settled(t, m.entityId, id);
    assert.equal(done.status, 'DELIVERED');
    const got = rx.requests.find((r) => r.headers['payd-event-id'] === id)!;
    assert.equal(verifyWebhookSignature(secret, String(got.headers['payd-signature']), got.body), true);

    const rotated = await t.app.inject({
      method: 'POST', url: `/admin/v1/entities/${up(m.entityId)}/webhook-secret/rotate`, headers: t.adminHeaders, payload: {},
    });
    assert.equal(rotated.statusCode, 200, rotated.body);
    assert.equal(rotated.json().entity_id, m.entityId);
    assert.equal(await secretOf(t.app, t.adminHeaders, m.entityId), rotated.json().secret);
    const again = await enqueue(t.testDb.db, { entityId: m.entityId, type: 'payment.captured', data: {} });
    assert.equal((await settled(t, m.entityId, again.id)).status, 'DELIVERED');
    const signed = rx.requests.find((r) => r.headers['payd-event-id'] === again.id)!;
    const header = String(signed.headers['payd-signature']);
    assert.equal(verifyWebhookSignature(rotated.json().secret, header, signed.body), true, 'the new secret signs');
    assert.equal(verifyWebhookSignature(secret, header, signed.body), true, 'the previous secret still signs during the overlap');

    const events = await t.app.inject({ url: `/admin/v1/entities/${up(m.entityId)}/webhook-events/${up(again.id)}`, headers: t.adminHeaders });
    assert.equal(events.statusCode, 200, events.body);
    assert.equal(events.json().id, again.id);
    const list = await t.app.inject({ url: `/admin/v1/entities/${up(m.entityId)}/webhook-events?starting_after=${up(id)}`, headers: t.adminHeaders });
    assert.equal(list.statusCode, 200, list.body);
  });

  it('answers entity and API-key paths in any case with the canonical ids', async () => {
    const m = await t.createMerchant();
    const got = await t.app.inject({ url: `/admin/v1/entities/${up(m.entityId)}`, headers: t.adminHeaders });
    assert.equal(got.statusCode, 200, got.body);
    assert.equal(got.json().id, m.entityId);
    const key = await t.app.inject({ method: 'POST', url: `/admin/v1/entities/${up(m.entityId)}/api-keys`, headers: t.adminHeaders });
    assert.equal(key.statusCode, 201, key.body);
    assert.equal(key.json().entity_id, m.entityId);
    const revoked = await t.app.inject({
      method: 'DELETE', url: `/admin/v1/entities/${up(m.entityId)}/api-keys/${up(key.json().id)}`, headers: t.adminHeaders,
    });
    assert.equal(revoked.statusCode, 200, revoked.body);
    assert.equal(revoked.json().id, key.json().id);
    // The urn:uuid: form passes the uuid format check: it must not reach SQL as such.
    const urn = await t.app.inject({ url: `/admin/v1/entities/urn:uuid:${m.entityId}`, headers: t.adminHeaders });
    assert.ok(urn.statusCode === 200 || urn.statusCode === 400, urn.body);
    if (urn.statusCode === 200) assert.equal(urn.json().id, m.entityId);
    else expectProblem(urn, 400);
  });

  it('merchant paths and body ids: upper case is the same object', async () => {
    const m = await t.createMerchant();
    const link = await t.app.inject({
      method: 'POST', url: '/v2/payment-links', headers: m.auth,
      payload: { entity_id: up(m.entityId), amount: 1000, currency: 'EUR' },
    });
    assert.equal(link.statusCode, 200, link.body);
    assert.equal(link.json().entity_id, m.entityId);
    const got = await t.app.inject({ url: `/v2/payment-links/${up(link.json().id)}`, headers: m.auth });
    assert.equal(got.statusCode, 200, got.body);
    assert.equal(got.json().id, link.json().id);
  });

  it('repairs a secret sealed with an upper-case id by the old bug', async () => {
    const m = await t.createMerchant();
    const plain = generateSecret('whsec_');
    await t.testDb.db.query('INSERT INTO webhook_secrets (entity_id, version, secret_enc) VALUES ($1, 1, $2)',
      [m.entityId, encrypt(MASTER_KEY, plain, `webhook-secret:${up(m.entityId)}:1`)]);
    assert.equal(await secretOf(t.app, t.adminHeaders, m.entityId), plain);
    const { rows } = await t.testDb.db.query<{ secret_enc: string }>('SELECT secret_enc FROM webhook_secrets WHERE entity_id = $1', [m.entityId]);
    const { decrypt } = await import('../../src/platform/crypto/secrets.ts');
    assert.equal(decrypt(MASTER_KEY, rows[0]!.secret_enc, `webhook-secret:${m.entityId}:1`), plain, 're-sealed with the canonical id');
  });
});
