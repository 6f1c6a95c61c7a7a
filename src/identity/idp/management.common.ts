// What the Management API's route files share (management.routes.ts assembles them): the
// OpenAPI tag and security, a user's id in the path, and the caller behind each token.
import { Type } from 'typebox';
import { Uuid } from '../../platform/http/schemas.ts';
import type { IdentityService } from './idp.service.ts';
import type { ManagementService } from './management.ts';
import type { Caller } from './authority.ts';

export const tags = ['Identity Management API'];
export const security = [{ managementToken: [] }];
export const UserParams = Type.Object({ id: Uuid() });

/** need(scope): a route's preHandler, the token's scope check; caller and actor: who it found, for the handler. */
export function managementCallers(management: ManagementService) {
  // The caller behind the token: what it reaches is decided from it (authority.ts), and it
  // is recorded with what it changes.
  const callers = new WeakMap<object, Caller>();
  const need = (scope: string) => async (request: { headers: { authorization?: string | undefined } }) => {
    callers.set(request, await management.authorize(request.headers.authorization, scope));
  };
  const caller = (request: object): Caller => {
    const c = callers.get(request);
    if (!c) throw new Error('Management API route without its scope check');
    return c;
  };
  const actor = (request: object) => ({ via: 'management' as const, name: `management:${caller(request).clientId}`, caller: caller(request) });
  return { need, caller, actor };
}

export interface ManagementRouteDeps {
  management: ManagementService;
  identity: IdentityService;
  callers: ReturnType<typeof managementCallers>;
}
