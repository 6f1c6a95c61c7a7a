// Per-entity webhook signing secrets: created on first use, encrypted at rest with the
// master key (the HMAC needs the plaintext, so a hash would not do), revealed to the
// operator and rotated with an overlap during which both secrets sign.
import type { Db, Queryable } from '../platform/db/index.ts';
import { decrypt, encrypt, generateSecret } from '../platform/crypto/secrets.ts';
import { endpointsRepo, type SecretRow } from './endpoints.repo.ts';

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

export class WebhookSecrets {
  constructor(
    private readonly db: Db,
    private readonly masterKey: Buffer,
  ) {}

  /** Creates the entity's secret when it has none; true when this call created it. Race-safe. */
  async ensure(q: Queryable, entityId: string): Promise<boolean> {
    if (await endpointsRepo.getSecret(q, entityId)) return false;
    const secret = generateSecret(WEBHOOK_SECRET_PREFIX);
    return endpointsRepo.insertSecret(q, entityId, encrypt(this.masterKey, secret, aad(entityId, 1)));
  }

  /** The secrets that sign a call now: the current one, then the previous one while it overlaps. */
  async signingSecrets(entityId: string): Promise<string[]> {
    await this.ensure(this.db, entityId);
    const row = (await endpointsRepo.getSecret(this.db, entityId))!;
    const out = [this.open(row)];
    if (row.previous_secret_enc && row.previous_active) {
      out.push(decrypt(this.masterKey, row.previous_secret_enc, aad(entityId, row.version - 1)));
    }
    return out;
  }

  /** The current secret in clear (the entity must exist); creates it when missing. */
  async reveal(entityId: string): Promise<RevealedSecret & { created: boolean }> {
    const created = await this.ensure(this.db, entityId);
    return { ...this.view((await endpointsRepo.getSecret(this.db, entityId))!), created };
  }

  /** A new current secret; the old one keeps signing for `previousSeconds` (0: stops at once). */
  async rotate(entityId: string, previousSeconds: number): Promise<RevealedSecret> {
    return this.db.transaction(async (tx) => {
      await this.ensure(tx, entityId);
      const current = (await endpointsRepo.getSecret(tx, entityId, true))!;
      const secret = generateSecret(WEBHOOK_SECRET_PREFIX);
      const sealed = encrypt(this.masterKey, secret, aad(entityId, current.version + 1));
      return this.view(await endpointsRepo.rotateSecret(tx, entityId, sealed, previousSeconds));
    });
  }

  private open(row: SecretRow): string {
    return decrypt(this.masterKey, row.secret_enc, aad(row.entity_id, row.version));
  }

  private view(row: SecretRow): RevealedSecret {
    return {
      secret: this.open(row),
      version: row.version,
      created_at: row.created_at,
      rotated_at: row.rotated_at,
      previous_expires_at: row.previous_active ? row.previous_expires_at : null,
    };
  }
}
