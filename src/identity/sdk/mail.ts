// The identity provider's mails (password reset, invitation, sign-up). Every mail is
// recorded in the outbox table (the administration console lists it), with the secrets of
// its links redacted (token=[redacted]: redactLinks): whoever reads the database, a backup
// or the console cannot use a link. The mail as written, links included, goes only to the
// SMTP server of PAYD_SMTP_URL, with nodemailer (loaded only then), and the outcome is
// recorded; without SMTP nobody receives the links (an inviting admin is shown the
// invitation link once instead). A mail that cannot be sent is logged and kept, never an
// error for the user who asked for it (the answer to "forgot password" is the same whether
// a mail went out or not).
import { randomUUID } from 'node:crypto';
import type { Db } from '../../platform/db/index.ts';
import { sdkRepo } from './sdk.repo.ts';
import { redactLinks } from '../../platform/observability/logger.ts';

interface Log { warn(obj: object, msg: string): void }

interface Transport { sendMail(m: { from: string; to: string; subject: string; text: string }): Promise<unknown> }

export class Mailer {
  private transport: Promise<Transport> | undefined;
  log: Log | undefined;

  constructor(private readonly db: Db, private readonly options: { smtpUrl: string | undefined; from: string }) {}

  get transportName(): 'outbox' | 'smtp' {
    return this.options.smtpUrl ? 'smtp' : 'outbox';
  }

  /** Records the mail (links redacted) and, with SMTP configured, sends it as written; resolves once recorded (sending goes on). */
  async send(to: string, subject: string, body: string): Promise<{ id: string; sent: Promise<void> }> {
    const id = randomUUID();
    await sdkRepo.insertMail(this.db, { id, to_address: to, subject, body: redactLinks(body), transport: this.transportName });
    const sent = this.options.smtpUrl ? this.deliver(id, to, subject, body) : Promise.resolve();
    return { id, sent };
  }

  private async deliver(id: string, to: string, subject: string, body: string): Promise<void> {
    try {
      this.transport ??= import('nodemailer').then((m) => m.default.createTransport(this.options.smtpUrl!) as Transport);
      await (await this.transport).sendMail({ from: this.options.from, to, subject, text: body });
      await sdkRepo.mailSent(this.db, id, null);
    } catch (err) {
      const message = (err as Error).message ?? String(err);
      this.log?.warn({ mail_id: id, err: { message } }, 'identity mail not sent: kept in the outbox');
      await sdkRepo.mailSent(this.db, id, message.slice(0, 500)).catch(() => {});
    }
  }
}
