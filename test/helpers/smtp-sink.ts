// A real SMTP server (smtp-server) that keeps what payd sends: the only place, besides
// the page that shows an invitation once, where the links of identity mails can be read
// (the outbox keeps them redacted). Give `url` to the app as smtpUrl.
import type { SMTPServer } from 'smtp-server';

export interface SentMail {
  to: string[];
  /** The raw message, quoted-printable soft line breaks and =3D undone. */
  text: string;
}

export interface SmtpSink {
  url: string;
  mails: SentMail[];
  /** The next mail to this address not yet taken (waits for it, up to boundMs). */
  next(to: string, boundMs?: number): Promise<SentMail>;
  /** The first link in the mail that contains `fragment`. */
  link(mail: SentMail, fragment: string): URL;
  close(): Promise<void>;
}

export async function startSmtpSink(): Promise<SmtpSink> {
  const { SMTPServer: Server } = await import('smtp-server');
  const mails: SentMail[] = [];
  const taken = new Set<SentMail>();
  const waiters: Array<() => void> = [];
  const server: SMTPServer = new Server({
    authOptional: true, disabledCommands: ['STARTTLS'], logger: false,
    onData(stream, session, done) {
      let raw = '';
      stream.on('data', (c: Buffer) => { raw += c.toString(); }).on('end', () => {
        const text = raw.replace(/=\r?\n/g, '').replace(/=3D/g, '=');
        mails.push({ to: session.envelope.rcptTo.map((r) => r.address.toLowerCase()), text });
        for (const w of waiters.splice(0)) w();
        done();
      });
    },
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.server.address() as { port: number }).port;
  const sink: SmtpSink = {
    url: `smtp://127.0.0.1:${port}`,
    mails,
    async next(to, boundMs = 10_000) {
      const deadline = Date.now() + boundMs;
      for (;;) {
        const found = mails.find((m) => !taken.has(m) && m.to.includes(to.toLowerCase()));
        if (found) {
          taken.add(found);
          return found;
        }
        if (Date.now() > deadline) throw new Error(`no mail to ${to}`);
        // Woken by the next mail that arrives (or re-checked at the bound).
        await new Promise<void>((r) => {
          const timer = setTimeout(r, Math.max(0, deadline - Date.now()) + 1);
          waiters.push(() => { clearTimeout(timer); r(); });
        });
      }
    },
    link(mail, fragment) {
      const found = mail.text.match(/https?:\/\/[^\s<>"']+/g)?.find((u) => u.includes(fragment));
      if (!found) throw new Error(`no link with ${fragment} in the mail:\n${mail.text}`);
      return new URL(found);
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
  return sink;
}
