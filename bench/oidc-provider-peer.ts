// The token bench's peer (bench/throughput.ts): node-oidc-provider (a devDependency, the
// certified OpenID provider for Node) with one confidential client allowed the
// client_credentials grant, so that payd's POST /oauth/token is measured beside another
// Node token endpoint in the same run. PEER_FORMAT picks its access tokens:
//   jwt     HS256 JWTs (a resource server whose tokens are signed with a 32-byte secret),
//           what payd issues;
//   opaque  its default: a random value, the token kept in its in-memory adapter.
// The client authenticates with HTTP Basic (client_secret_basic, its default), as payd's
// clients send their API key in a header. Prints {"port": n} on stdout once listening.
// Env: PORT (0: any), PEER_FORMAT (jwt), PEER_CLIENT_ID, PEER_CLIENT_SECRET.
import { randomBytes } from 'node:crypto';
// @ts-expect-error oidc-provider ships no type declarations
import Provider from 'oidc-provider';

const PEER_RESOURCE = 'urn:payd:bench';

const format = process.env.PEER_FORMAT === 'opaque' ? 'opaque' : 'jwt';
const provider = new Provider('http://127.0.0.1', {
  clients: [{
    client_id: process.env.PEER_CLIENT_ID, client_secret: process.env.PEER_CLIENT_SECRET,
    grant_types: ['client_credentials'], response_types: [], redirect_uris: [],
  }],
  scopes: ['payment-api'],
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => PEER_RESOURCE,
      getResourceServerInfo: () => ({
        scope: 'payment-api', accessTokenTTL: 3600, accessTokenFormat: format,
        ...(format === 'jwt' ? { jwt: { sign: { alg: 'HS256', key: randomBytes(32) } } } : {}),
      }),
    },
  },
});
provider.on('server_error', (_ctx: unknown, err: Error) => console.error(err));
const server = provider.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  console.log(JSON.stringify({ port: (server.address() as { port: number }).port, format }));
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
