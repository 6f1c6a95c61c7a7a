// The console's Mail page: the identity mails, newest first, as the outbox keeps them,
// their links' tokens redacted (sdk/mail.ts), so the console shows what was sent and
// whether, not a usable link.
import type { FastifyInstance } from 'fastify';
import type { ConsoleService, MailRow } from './console.service.ts';
import { consolePage } from './layout.tsx';
import type { ConsoleAuth } from './session.routes.tsx';

const delivery = (m: MailRow) => (m.transport === 'smtp'
  ? (m.sent_at ? 'sent by SMTP' : m.error ? `not sent: ${m.error}` : 'sending')
  : 'outbox only (no SMTP server configured)');

export async function consoleMailRoutes(app: FastifyInstance, deps: { auth: ConsoleAuth; console: ConsoleService }) {
  app.get('/console/mail', { schema: { hide: true } }, async (request, reply) => {
    const a = await deps.auth.admin(request, reply);
    if (!a) return reply;
    const mails = await deps.console.mails(100);
    return consolePage(reply, 200, { title: 'Mail', email: a.user.email, csrf: a.csrf }, mails.length ? mails.map((m) => (
      <article class="mail">
        <h2>{m.subject}</h2>
        <p class="muted">To {m.to_address} · {m.created_at.toISOString()} · {delivery(m)}</p>
        <pre>{m.body}</pre>
      </article>
    )) : <p>No mail yet.</p>);
  });
}
