// The Management API (/api/v2): bearer tokens from client credentials of an application
// granted management scopes; users and their events (management-users.routes.ts),
// applications (management-clients.routes.ts), and login-as
// (management-login-as.routes.ts). Each route checks its scope first (need, in
// management.common.ts) and hands the caller it found to the services.
import type { FastifyInstance } from 'fastify';
import type { IdentityService } from './idp.service.ts';
import type { ManagementService } from './management.ts';
import { managementCallers } from './management.common.ts';
import { managementUserRoutes } from './management-users.routes.ts';
import { managementClientRoutes } from './management-clients.routes.ts';
import { managementLoginAsRoutes } from './management-login-as.routes.ts';

export async function managementRoutes(app: FastifyInstance, { management, identity }: { management: ManagementService; identity: IdentityService }) {
  const deps = { management, identity, callers: managementCallers(management) };
  await managementUserRoutes(app, deps);
  await managementClientRoutes(app, deps);
  await managementLoginAsRoutes(app, deps);
}
