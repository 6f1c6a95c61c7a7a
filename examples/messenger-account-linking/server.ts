// Example: the account_linking receiver as a small server.
//   MESSENGER_APP_SECRET=... PAYD_TOKEN_URL=https://payd.example.com/oauth/token \
//   PAYD_CLIENT_ID=... PAYD_CLIENT_SECRET=... ACCOUNT_LINKING_URL=https://... \
//   node --import tsx examples/messenger-account-linking/server.ts
import http from 'node:http';
import { accountLinkingReceiver } from './receiver.ts';

const env = (name: string) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is required`);
  return v;
};

const handler = accountLinkingReceiver({
  appSecret: env('MESSENGER_APP_SECRET'),
  tokenUrl: env('PAYD_TOKEN_URL'),
  clientId: env('PAYD_CLIENT_ID'),
  clientSecret: env('PAYD_CLIENT_SECRET'),
  accountLinkingUrl: env('ACCOUNT_LINKING_URL'),
  onLinked: ({ senderId, tokens }) => console.log(`linked ${senderId}: access token for ${tokens.expires_in} s`),
  onUnlinked: (senderId) => console.log(`unlinked ${senderId}`),
  onError: (err) => console.error('account linking failed', err),
});

const port = Number(process.env.PORT ?? 8080);
http.createServer(handler).listen(port, () => console.log(`account_linking receiver on :${port}`));
