// The identity provider: login pages, /oauth/authorize, discovery, userinfo,
// introspection, revocation, management API, login-as, console.
// (Placeholder wired into app.ts; the identity provider work fills it in.)
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.ts';
import type { Db } from '../platform/db/index.ts';
import type { KeyStore } from '../platform/crypto/keystore.ts';
import type { GrantHandler } from './oauth/token.routes.ts';

export interface IdentityDeps {
  config: Config;
  db: Db;
  keys: KeyStore;
  masterKey: Buffer;
}

export interface IdentityProvider {
  /** Grants the provider adds to POST /oauth/token (authorization_code, ...). */
  grants: Record<string, GrantHandler>;
  /** Registers the provider's routes. */
  routes: (app: FastifyInstance) => Promise<void>;
  /** Stops timers (called on app close). */
  stop: () => Promise<void>;
}

export async function createIdentityProvider(_deps: IdentityDeps): Promise<IdentityProvider> {
  return { grants: {}, routes: async () => {}, stop: async () => {} };
}
