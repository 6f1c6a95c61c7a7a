// Per-entity webhook signing secrets: created on first use, encrypted at rest with the
// master key (the HMAC needs the plaintext, so a hash would not do), revealed to the
// operator and rotated with an overlap during which both secrets sign.
import type { Db, Queryable } from '../platform/db/index.ts';
import { decrypt, encrypt, generateSecret } from '../platform/crypto/secrets.ts';
import { type EndpointSecretRow, endpointsRepo, type SecretRow } from './endpoints.repo.ts';
import { openHeaders, sealHeaders } from './header-seal.ts';
import type { WebhookHeader } from './target.ts';

export const WEBHOOK_SECRET_PREFIX = 'whsec_';

export interface RevealedSecret {
  secret: string;
  version: number;
  created_at: Date;
  rotated_at: Date | null;
  /** Until when the previous secret still signs (a second v1), or null. */
  previous_expires_at: Date | null;
}

const aad = (entityId: string, version: number) => `webhook-secret:${entityId}:${version}`;
const endpointAad = (endpointId: string, version: number) => `webhook-endpoint-secret:${endpointId}:${version}`;

/** What signs a delivery: an endpoint's own secret (columns of webhook_endpoints), else the entity's. */
export interface SigningSource {
  entity_id: string;
  endpoint_id: string | null;
  secret_version: number | null;
  secret_enc: string | null;
  previous_secret_enc: string | null;
  previous_active: boolean;
}

export class WebhookSecrets {
  constructor(
    private readonly db: Db,
    private readonly masterKey: Buffer,
  ) {}

  /**
   * Creates the entity's secret when it has none; true when this call created it. Race-safe.
   * The secret is sealed with the entity's id as stored (never the caller's spelling of it).
   */
  async ensure(q: Queryable, entityId: string): Promise<boolean> {
    if (await endpointsRepo.getSecret(q, entityId)) return false;
    const storedId = await endpointsRepo.storedEntityId(q, entityId);
    if (storedId === undefined) throw new Error(`entity ${entityId} does not exist`);
    const secret = generateSecret(WEBHOOK_SECRET_PREFIX);
    return endpointsRepo.insertSecret(q, storedId, encrypt(this.masterKey, secret, aad(storedId, 1)));
  }

  /** Extra header values sealed for the entity (its stored id), null when there are none. */
  sealHeaders(entityId: string, headers: readonly WebhookHeader[] | null | undefined): string | null {
    return sealHeaders(this.masterKey, entityId, headers);
  }

  /** The headers to send: opened from their sealed form, or as stored by a payd before migration 0014. */
  headersToSend(entityId: string, sealed: string | null, stored: WebhookHeader[]): WebhookHeader[] {
    return sealed ? openHeaders(this.masterKey, entityId, sealed) : stored;
  }

  /** The secrets that sign a call now: the current one, then the previous one while it overlaps. */
  async signingSecrets(entityId: string): Promise<string[]> {
    await this.ensure(this.db, entityId);
    const row = (await endpointsRepo.getSecret(this.db, entityId))!;
    const out = [await this.open(row, 'current')];
    if (row.previous_secret_enc && row.previous_active) out.push(await this.open(row, 'previous'));
    return out;
  }

  /**
   * The secrets that sign a delivery: its endpoint's own (current, then previous while it
   * overlaps), or the entity's (a default endpoint, a payment link's webhook).
   */
  async signingSecretsFor(d: SigningSource): Promise<string[]> {
    if (d.endpoint_id === null || d.secret_enc === null || d.secret_version === null) return this.signingSecrets(d.entity_id);
    const out = [decrypt(this.masterKey, d.secret_enc, endpointAad(d.endpoint_id, d.secret_version))];
    if (d.previous_secret_enc && d.previous_active) out.push(decrypt(this.masterKey, d.previous_secret_enc, endpointAad(d.endpoint_id, d.secret_version - 1)));
    return out;
  }

  /** A new endpoint's own secret: in clear (shown once) and sealed (version 1). */
  newEndpointSecret(endpointId: string): { secret: string; sealed: string } {
    const secret = generateSecret(WEBHOOK_SECRET_PREFIX);
    return { secret, sealed: encrypt(this.masterKey, secret, endpointAad(endpointId, 1)) };
  }

  /**
   * Rotates an endpoint's secret (the default endpoint's is the entity's: rotated as
   * such). undefined when the entity has no such endpoint.
   */
  async rotateEndpoint(entityId: string, endpointId: string, previousSeconds: number): Promise<(RevealedSecret & { endpoint_id: string }) | undefined> {
    const row = await this.db.transaction(async (tx) => {
      const current = await endpointsRepo.endpointSecret(tx, entityId, endpointId, true);
      if (!current || current.secret_enc === null || current.secret_version === null) return current;
      const secret = generateSecret(WEBHOOK_SECRET_PREFIX);
      const sealed = encrypt(this.masterKey, secret, endpointAad(current.id, current.secret_version + 1));
      return endpointsRepo.rotateEndpointSecret(tx, current.id, sealed, previousSeconds);
    });
    if (!row) return undefined;
    if (row.secret_enc === null || row.secret_version === null) return { endpoint_id: row.id, ...(await this.rotate(entityId, previousSeconds)) };
    return { endpoint_id: row.id, ...this.endpointView(row) };
  }

  private endpointView(row: EndpointSecretRow): RevealedSecret {
    return {
      secret: decrypt(this.masterKey, row.secret_enc!, endpointAad(row.id, row.secret_version!)),
      version: row.secret_version!,
      created_at: row.created_at,
      rotated_at: row.rotated_at,
      previous_expires_at: row.previous_active ? row.previous_expires_at : null,
    };
  }

  /** The current secret in clear (the entity must exist); creates it when missing. */
  async reveal(entityId: string): Promise<RevealedSecret & { created: boolean }> {
    const created = await this.ensure(this.db, entityId);
    return { ...(await this.view((await endpointsRepo.getSecret(this.db, entityId))!)), created };
  }

  /** A new current secret; the old one keeps signing for `previousSeconds` (0: stops at once). */
  async rotate(entityId: string, previousSeconds: number): Promise<RevealedSecret> {
    const row = await this.db.transaction(async (tx) => {
      await this.ensure(tx, entityId);
      const current = (await endpointsRepo.getSecret(tx, entityId, true))!;
      if (previousSeconds > 0) await this.open(current, 'current', tx); // repairs an old seal before it becomes the previous one
      const secret = generateSecret(WEBHOOK_SECRET_PREFIX);
      const sealed = encrypt(this.masterKey, secret, aad(current.entity_id, current.version + 1));
      return endpointsRepo.rotateSecret(tx, current.entity_id, sealed, previousSeconds);
    });
    return this.view(row);
  }

  /**
   * Opens the current or previous secret of a row, bound to the stored entity id. A
   * secret sealed by payd before 0.1.1 with an id typed in upper case (issue 12, item
   * 8) still opens with that spelling: it is then sealed again with the stored id.
   */
  private async open(row: SecretRow, which: 'current' | 'previous', q: Queryable = this.db): Promise<string> {
    const version = which === 'current' ? row.version : row.version - 1;
    const sealed = which === 'current' ? row.secret_enc : row.previous_secret_enc!;
    try {
      return decrypt(this.masterKey, sealed, aad(row.entity_id, version));
    } catch (err) {
      let plain: string;
      try {
        plain = decrypt(this.masterKey, sealed, aad(row.entity_id.toUpperCase(), version));
      } catch {
        throw err;
      }
      await endpointsRepo.resealSecret(q, row.entity_id, which, sealed, encrypt(this.masterKey, plain, aad(row.entity_id, version)));
      return plain;
    }
  }

  private async view(row: SecretRow): Promise<RevealedSecret> {
    return {
      secret: await this.open(row, 'current'),
      version: row.version,
      created_at: row.created_at,
      rotated_at: row.rotated_at,
      previous_expires_at: row.previous_active ? row.previous_expires_at : null,
    };
  }
}
