// Reference receiver for the messenger platform's `account_linking` webhook event, for
// merchants linking messenger users to their payd identity accounts:
// - verifies X-Hub-Signature-256 (HMAC-SHA256 of the raw body with the app secret);
// - answers 200 at once (the platform wants an answer within 20 seconds and retries
//   otherwise) and processes afterwards;
// - de-duplicates retried deliveries BEFORE exchanging the code: a second exchange of the
//   same code is refused by payd and revokes the tokens of the first;
// - exchanges the code at payd's token endpoint with redirect_uri = the account-linking URL;
// - handles `unlinked`.
// Node's http only, no framework. Keep `seen` in shared storage (a database table with a
// unique key) when several receivers run.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

export interface LinkedAccount {
  /** The messenger user (page-scoped id). */
  senderId: string;
  tokens: { access_token: string; id_token?: string; expires_in: number };
}

export interface ReceiverOptions {
  /** The messenger app secret (signs the deliveries). */
  appSecret: string;
  /** payd's token endpoint, e.g. https://payd.example.com/oauth/token */
  tokenUrl: string;
  clientId: string;
  clientSecret: string;
  /** The account-linking URL registered as an Allowed Callback URL (no query string). */
  accountLinkingUrl: string;
  onLinked: (account: LinkedAccount) => Promise<void> | void;
  onUnlinked: (senderId: string) => Promise<void> | void;
  onError?: (err: unknown) => void;
  /** Remembers processed codes; returns false when the key was already there. */
  seen?: { add(key: string): Promise<boolean> | boolean };
  /** Largest accepted body (bytes). */
  maxBody?: number;
}

interface AccountLinkingEvent {
  object?: string;
  entry?: Array<{ messaging?: Array<{ sender?: { id?: string }; account_linking?: { status?: string; authorization_code?: string } }> }>;
}

/** A signature header "sha256=<hex>" checked in constant time. */
export function validSignature(appSecret: string, rawBody: Buffer, header: string | undefined): boolean {
  if (!header?.startsWith('sha256=')) return false;
  const expected = createHmac('sha256', appSecret).update(rawBody).digest();
  const given = Buffer.from(header.slice(7), 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

function memorySeen() {
  const keys = new Set<string>();
  return { add: (k: string) => (keys.has(k) ? false : (keys.add(k), true)) };
}

export function accountLinkingReceiver(options: ReceiverOptions) {
  const seen = options.seen ?? memorySeen();
  const maxBody = options.maxBody ?? 1_000_000;

  async function exchange(code: string) {
    const res = await fetch(options.tokenUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${encodeURIComponent(options.clientId)}:${encodeURIComponent(options.clientSecret)}`).toString('base64')}`,
      },
      body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: options.accountLinkingUrl }),
    });
    if (!res.ok) throw new Error(`code exchange failed: ${res.status} ${await res.text()}`);
    return (await res.json()) as LinkedAccount['tokens'];
  }

  async function process(event: AccountLinkingEvent) {
    if (event.object !== 'page') return;
    for (const entry of event.entry ?? []) {
      for (const m of entry.messaging ?? []) {
        const link = m.account_linking;
        const sender = m.sender?.id;
        if (!link || !sender) continue;
        if (link.status === 'linked' && link.authorization_code) {
          if (!(await seen.add(`code:${link.authorization_code}`))) continue; // a retried delivery
          await options.onLinked({ senderId: sender, tokens: await exchange(link.authorization_code) });
        } else if (link.status === 'unlinked') {
          await options.onUnlinked(sender);
        }
      }
    }
  }

  /** The request handler: POST with the event; anything else 404/405. */
  return (req: IncomingMessage, res: ServerResponse) => {
    if (req.method !== 'POST') {
      res.writeHead(405).end();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > maxBody) req.destroy();
      else chunks.push(c);
    });
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      if (!validSignature(options.appSecret, raw, req.headers['x-hub-signature-256'] as string | undefined)) {
        res.writeHead(403).end();
        return;
      }
      let event: AccountLinkingEvent;
      try {
        event = JSON.parse(raw.toString('utf8')) as AccountLinkingEvent;
      } catch {
        res.writeHead(400).end();
        return;
      }
      res.writeHead(200).end('EVENT_RECEIVED'); // answer first, work afterwards
      void process(event).catch((err: unknown) => options.onError?.(err));
    });
  };
}
