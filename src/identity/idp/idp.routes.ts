// HTTP of the identity provider, assembled: the browser's pages (src/identity/login/:
// /oauth/authorize in authorize.routes.ts, sign-in, sign-up, consent, logout; mfa/, sdk/,
// federation/), discovery and the JWKS of RS256 id_tokens (oauth/discovery.routes.ts),
// introspection, revocation and /userinfo (oauth/user-tokens.routes.ts), and operator
// endpoints to create users and applications (operator.routes.ts). The
// authorization_code grant is served by POST /oauth/token.
import type { FastifyInstance } from 'fastify';
import type { IdentityService } from './idp.service.ts';
import { loginPages } from '../login/pages.ts';
import { loginRoutes } from '../login/login.routes.ts';
import { logoutRoutes } from '../login/logout.routes.ts';
import { webMessageRoutes } from '../sdk/web-message.ts';
import { sdkRoutes } from '../sdk/sdk.routes.ts';
import type { Mailer } from '../sdk/mail.ts';
import type { Db } from '../../platform/db/index.ts';
import { consentRoutes } from '../login/consent.routes.ts';
import { Federation } from '../federation/federation.ts';
import { federationRoutes } from '../federation/federation.routes.ts';
import { authorizeRoutes } from '../login/authorize.routes.ts';
import { SignUps } from './signup.ts';
import { Mfa } from '../mfa/mfa.ts';
import { mfaRoutes } from '../mfa/mfa.routes.ts';
import { Passkeys } from '../mfa/passkeys.ts';
import { type Clock, systemClock } from '../../platform/clock.ts';
import { discoveryRoutes } from '../oauth/discovery.routes.ts';
import { userTokenRoutes } from '../oauth/user-tokens.routes.ts';
import { identityOperatorRoutes } from './operator.routes.ts';

export interface IdpRouteDeps {
  db: Db;
  identity: IdentityService;
  baseUrl: string;
  csrfKey: Buffer;
  mailer: Mailer;
  masterKey: Buffer;
  allowHttpLocalhost: boolean;
  /** PAYD_CONSOLE_REQUIRE_MFA: an administrator cannot remove their last second factor. */
  consoleRequiresSecondFactor: boolean;
  /** The time of TOTP codes and passkey challenges' expiry (tests move it); default the system clock. */
  clock?: Clock;
}

export async function identityRoutes(root: FastifyInstance, { db, identity, baseUrl, csrfKey, mailer, masterKey, allowHttpLocalhost, consoleRequiresSecondFactor, clock = systemClock }: IdpRouteDeps) {
  const pages = loginPages(baseUrl, csrfKey);
  const mfa = new Mfa(db, masterKey, new URL(baseUrl).host, clock);
  const passkeys = new Passkeys(db, baseUrl, new URL(baseUrl).host, clock);
  const secondStep = await mfaRoutes(root, { identity, pages, mfa, passkeys, complete: () => complete, consoleRequiresSecondFactor });
  const complete = await consentRoutes(root, { identity, pages, secondStep });
  const signups = new SignUps(db, identity, mailer, baseUrl);
  await loginRoutes(root, { identity, pages, complete, signups, baseUrl, secondStep });
  await logoutRoutes(root, { identity, pages });
  await sdkRoutes(root, { db, identity, pages, mailer, baseUrl, signups });
  await webMessageRoutes(root);
  const federation = new Federation(db, masterKey, `${baseUrl}/oauth/federation/callback`, identity);
  await federationRoutes(root, { identity, pages, complete, secondStep, federation, allowHttpLocalhost });

  await authorizeRoutes(root, { identity, pages, mfa, secondStep, complete, federation });

  await discoveryRoutes(root, { identity, baseUrl });
  await userTokenRoutes(root, { identity });
  await identityOperatorRoutes(root, { identity });
}
