// OpenAPI 3.1 document generated from the route schemas (the same TypeBox schemas that
// validate requests and serialize responses), served at /openapi.json with a reference
// page at /docs.
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { finishDocument } from './openapi-finish.ts';

export const openapiPlugin = fp<{ baseUrl: string; version: string }>(async function openapi(app: FastifyInstance, opts) {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'payd Payment API',
        version: opts.version,
        description:
          'Payment API v2 of payd: client sessions, payments split across partners, captures, refunds, voids, ' +
          'payment links, eligible solutions and signing keys; plus the OAuth token endpoint and the operator API. ' +
          'Amounts are integers in the minor unit of the currency (cents for EUR). Errors are application/problem+json ' +
          '(RFC 9457). Decisions on the gaps of the specification are listed in docs/decisions.md.',
      },
      servers: [{ url: opts.baseUrl }],
      tags: [
        { name: 'Authentication', description: 'OAuth 2.0 token endpoint' },
        { name: 'Client sessions', description: 'Sessions a merchant front office creates for the payment widget' },
        { name: 'Payments', description: 'Payments split across partners, and their captures, refunds and voids' },
        { name: 'Saved cards', description: 'Cards a partner kept on file for a customer (save_token), to list, read and delete; payments pay with them (SAVED_CARD instruments)' },
        { name: 'Signing keys', description: 'Keys that verify service-redirection-data tokens' },
        { name: 'Events', description: 'The events payd sends as webhooks, to read back (catch up without webhooks, payd listen)' },
        { name: 'Webhooks', description: 'Your webhook endpoint and its signing secret, and the calls payd makes to it (signed, at least once)' },
        { name: 'Partners', description: 'Notifications partners send to payd (their webhooks), verified by the partner connector (docs/connectors.md)' },
        { name: 'Operator', description: 'Onboarding of merchant entities and API keys (operator token, PAYD_ADMIN_TOKEN)' },
        { name: 'Payment links', description: 'Links to a page where the shopper pays; their payments and events' },
        { name: 'Eligible solutions', description: 'The partners and methods a shopper may pay with, for an amount and a country' },
        { name: 'Checkout (browser)', description: "The payment widget's calls from the shopper's browser, with the client session's credential" },
        { name: 'Identity', description: 'OpenID Connect provider: metadata, keys, sign-out, user info, token introspection and revocation' },
        { name: 'Identity Management API', description: "The identity provider's users and applications, with a management token (client credentials and management scopes)" },
      ],
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'Access token from POST /oauth/token, scope payment-api' },
          apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'Merchant API key (payd_sk_...)' },
          operatorToken: { type: 'http', scheme: 'bearer', description: 'The operator token (PAYD_ADMIN_TOKEN)' },
          sessionCredential: { type: 'apiKey', in: 'header', name: 'x-payd-session', description: "A client session's widget.data (browser widget only)" },
          managementToken: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'Identity Management API token: client credentials of an application with management scopes' },
        },
      },
    },
    // Operation ids, named request bodies, response headers, security, webhooks (openapi-finish.ts).
    transformObject: (documentObject) => finishDocument((documentObject as { openapiObject: Record<string, unknown> }).openapiObject) as never,
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { docExpansion: 'list', deepLinking: true } });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
});
