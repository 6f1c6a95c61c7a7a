// What the administration console reads and changes beyond the identity and management
// services: its own application, the applications and users it lists, the mail outbox,
// and the removal of a user's lost second factor (recorded as an event of that user, by
// whom). The console's routes reach the repositories only through here.
import { randomUUID } from 'node:crypto';
import type { Db } from '../../platform/db/index.ts';
import { type AppRow, type UserRow, idpRepo } from '../idp/idp.repo.ts';
import { type MailRow, sdkRepo } from '../sdk/sdk.repo.ts';
import { Mfa } from '../mfa/mfa.ts';

export const CONSOLE_CLIENT_ID = 'payd-console';

export type { MailRow, UserRow };

export class ConsoleService {
  /** Reads and removals only: no secret is decrypted here. */
  private readonly mfa: Mfa;

  constructor(private readonly db: Db) {
    this.mfa = new Mfa(db, Buffer.alloc(0), '');
  }

  /** The console's own application (a first-party public client with PKCE), written at start. */
  ensureApp(callback: string, origin: string): Promise<void> {
    return idpRepo.ensureConsoleApp(this.db, CONSOLE_CLIENT_ID, callback, origin);
  }

  user(id: string): Promise<UserRow | undefined> {
    return idpRepo.user(this.db, id);
  }

  apps(): Promise<AppRow[]> {
    return idpRepo.apps(this.db);
  }

  /** An application the console may edit (not its own). */
  async app(clientId: string): Promise<AppRow | undefined> {
    const x = await idpRepo.app(this.db, clientId);
    return x && x.client_id !== CONSOLE_CLIENT_ID ? x : undefined;
  }

  /** The identity mails, newest first, their links' tokens redacted as the outbox keeps them (mail.ts). */
  mails(limit: number): Promise<MailRow[]> {
    return sdkRepo.mails(this.db, limit);
  }

  hasSecondFactor(userId: string): Promise<boolean> {
    return this.mfa.hasFactor(userId);
  }

  /** A lost second factor: removed by an administrator, recorded as an event of the user, by whom. */
  async removeSecondFactor(userId: string, by: { id: string; email: string }): Promise<void> {
    await this.db.transaction(async (tx) => {
      await new Mfa(tx, Buffer.alloc(0), '').remove(userId); // (no secret is read)
      await idpRepo.insertEvent(tx, {
        id: randomUUID(), user_id: userId, type: 'second_factor_removed', auth_type: 'console', client_id: CONSOLE_CLIENT_ID,
        login_as_profile_id: by.email, login_as_actor: `user:${by.id}`,
      });
    });
  }
}
