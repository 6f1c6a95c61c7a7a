// The identity administration console (server-rendered on src/web, at
// {console_origin}/console). Administrators sign in through the provider itself (the
// console is a first-party public client with PKCE); only users with is_admin get in.
// Pages, a file each: session (sign-in, sign-out, the CSRF token), applications (the
// home page), users (Profiles with Recent Activity, "Log in as", a lost second factor),
// mail (the outbox). Its reads and changes go through ConsoleService and the identity
// and management services.
import type { FastifyInstance } from 'fastify';
import type { Db } from '../../platform/db/index.ts';
import type { IdentityService } from '../idp/idp.service.ts';
import type { ManagementService } from '../idp/management.ts';
import { ConsoleService } from './console.service.ts';
import { consoleSessionRoutes } from './session.routes.tsx';
import { consoleApplicationsRoutes } from './applications.routes.tsx';
import { consoleUsersRoutes } from './users.routes.tsx';
import { consoleMailRoutes } from './mail.routes.tsx';

export { CONSOLE_CLIENT_ID } from './console.service.ts';

export interface ConsoleDeps {
  db: Db;
  identity: IdentityService;
  management: ManagementService;
  consoleOrigin: string;
  /** The key of the console's CSRF tokens (its session cookie is signed with payd's cookie key, src/web). */
  key: Buffer;
  /** PAYD_CONSOLE_REQUIRE_MFA: the console is open only to a sign-in made with a second factor (amr mfa). */
  requireSecondFactor: boolean;
}

export async function consoleRoutes(app: FastifyInstance, deps: ConsoleDeps) {
  const service = new ConsoleService(deps.db);
  await service.ensureApp(`${deps.consoleOrigin}/console/callback`, deps.consoleOrigin);
  const auth = await consoleSessionRoutes(app, { identity: deps.identity, console: service, consoleOrigin: deps.consoleOrigin, key: deps.key, requireSecondFactor: deps.requireSecondFactor });
  await consoleApplicationsRoutes(app, { auth, console: service, identity: deps.identity });
  await consoleUsersRoutes(app, { auth, console: service, identity: deps.identity, management: deps.management });
  await consoleMailRoutes(app, { auth, console: service });
}
