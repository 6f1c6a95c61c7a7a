// The identity provider: hosted login, /oauth/authorize (code + PKCE), the
// authorization_code grant on POST /oauth/token, discovery and /userinfo.
// messenger_code for account linking, the Management API, login-as and the console.
import { hkdfSync } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.ts';
import type { Clock } from '../platform/clock.ts';
import type { Db } from '../platform/db/index.ts';
import type { KeyStore } from '../platform/crypto/keystore.ts';
import type { GrantHandler } from './oauth/token.routes.ts';
import { IDP_ACCESS_TOKEN_KEYS, IDP_ID_TOKEN_KEYS, IdentityService } from './idp/idp.service.ts';
import { identityRoutes } from './idp/idp.routes.ts';
import { ManagementService } from './idp/management.ts';
import { managementRoutes } from './idp/management.routes.ts';
import { consoleRoutes } from './console/console.routes.ts';
import { Mailer } from './sdk/mail.ts';

export interface IdentityDeps {
  config: Config;
  db: Db;
  keys: KeyStore;
  masterKey: Buffer;
  /** The sign-in throttle's time; default the system clock. */
  clock?: Clock;
}

export interface IdentityProvider {
  service: IdentityService;
  /** Identity mails (password reset): the outbox, and SMTP when configured. */
  mailer: Mailer;
  management: ManagementService;
  /** Grants the provider adds to POST /oauth/token (authorization_code, ...). */
  grants: Record<string, GrantHandler>;
  /** Registers the provider's routes. */
  routes: (app: FastifyInstance) => Promise<void>;
  /** Stops timers (called on app close). */
  stop: () => Promise<void>;
}

export async function createIdentityProvider(deps: IdentityDeps): Promise<IdentityProvider> {
  // Made on first use (keystore.ts).
  deps.keys.register(IDP_ACCESS_TOKEN_KEYS, IDP_ID_TOKEN_KEYS);
  const service = new IdentityService(deps.db, deps.keys, deps.masterKey, deps.config.baseUrl, {
    allowHttpLocalhost: deps.config.identityAllowHttpLocalhost, claimsBase: deps.config.identityClaimsBase, ...(deps.clock ? { clock: deps.clock } : {}),
  });
  const management = new ManagementService(deps.db, deps.keys, service, deps.config.baseUrl, deps.config.consoleOrigin, {
    clientId: deps.config.identityLoginAsClientId, redirectUri: deps.config.identityLoginAsRedirectUri, responseType: deps.config.identityLoginAsResponseType,
  });
  const mailer = new Mailer(deps.db, { smtpUrl: deps.config.smtpUrl, from: deps.config.mailFrom });
  const csrfKey = Buffer.from(hkdfSync('sha256', deps.masterKey, Buffer.alloc(0), 'payd idp csrf v1', 32));
  const consoleKey = Buffer.from(hkdfSync('sha256', deps.masterKey, Buffer.alloc(0), 'payd console session v1', 32));
  return {
    service,
    mailer,
    management,
    grants: {
      authorization_code: (req) => service.exchangeCode(req.headers, req.body),
      refresh_token: (req) => service.refresh(req.headers, req.body),
      password: (req) => service.passwordGrant(req.headers, req.body, req.ip ?? ''),
      client_credentials: (req) => management.token(req.headers, req.body),
    },
    routes: async (app) => {
      mailer.log = app.log;
      await identityRoutes(app, {
        db: deps.db, identity: service, baseUrl: deps.config.baseUrl, csrfKey, mailer, masterKey: deps.masterKey, allowHttpLocalhost: deps.config.identityAllowHttpLocalhost, ...(deps.clock ? { clock: deps.clock } : {}),
      });
      await managementRoutes(app, { management, identity: service });
      await consoleRoutes(app, { db: deps.db, identity: service, management, consoleOrigin: deps.config.consoleOrigin, key: consoleKey });
    },
    stop: async () => {},
  };
}
