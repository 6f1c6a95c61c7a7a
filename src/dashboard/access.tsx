// Who may see a page of an entity: the signed-in user (auth.routes.ts) when they are a
// member of the entity in the URL (else a 404: another entity's pages do not exist for
// them), signed in with a second factor when the team requires one, with at least the
// role the page needs; and whether a posted form carries the session's CSRF token.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { hasSecondFactor } from '../identity/mfa/amr.ts';
import { csrfValid } from '../web/index.ts';
import { type Membership, type Role, can } from './members.ts';
import { page, roleLabel } from './views.ts';

export interface Signed {
  userId: string; email: string; sid: string; memberships: Membership[]; amr: string[];
  /** The CSRF token of the session's forms. */
  csrf: string;
  /** The session cookie's value as sent (the CSRF token is bound to it). */
  raw: string;
}
export type Member = Signed & { entity: Membership };

/** Who acts, as the action log records them (DashboardService.recordAction). */
export const actionBy = (m: Member) => ({ entity_id: m.entity.entity_id, user_id: m.userId, user_email: m.email });

export interface DashboardAuth {
  /** The signed-in user and their membership of the URL's entity (at least `needs`); else the reply is sent (sign-in, 404, 403) and undefined. */
  member: (request: FastifyRequest, reply: FastifyReply, needs?: Role) => Promise<Member | undefined>;
  signedIn: (request: FastifyRequest, reply: FastifyReply) => Promise<Signed | undefined>;
  /** Whether the posted form carries the session's CSRF token (src/web's csrfValid). */
  csrfOk: (request: FastifyRequest, s: { raw: string }) => boolean;
  /** The replica lag a page may read with (0 in answer to a post and shortly after one). */
  staleOk: (request: FastifyRequest) => number;
}

export function entityAccess(signedIn: DashboardAuth['signedIn'], idpOrigin: string, key: Buffer): Pick<DashboardAuth, 'member' | 'csrfOk'> {
  const member = async (request: FastifyRequest, reply: FastifyReply, needs: Role = 'viewer'): Promise<Member | undefined> => {
    const s = await signedIn(request, reply);
    if (!s) return undefined;
    const entityId = (request.params as { entity?: string }).entity ?? '';
    const entity = s.memberships.find((m) => m.entity_id === entityId);
    const chrome = { email: s.email, csrf: s.csrf, memberships: s.memberships };
    if (!entity) {
      page(reply, 404, { title: 'Not found', ...chrome }, <p>There is nothing here, or it is not yours to see.</p>);
      return undefined;
    }
    if (entity.second_factor_required && !hasSecondFactor(s.amr)) {
      // The team requires a second factor and this sign-in had none (amr without mfa): nothing of the entity is shown.
      page(reply, 403, { title: 'A second factor is required', ...chrome }, (
        <>
          <p role="alert">{entity.entity_name} requires its team to sign in with a second factor.</p>
          <ol>
            <li>If you have none yet, <a href={`${idpOrigin}/oauth/account/security`}>add an authenticator app to your account</a>.</li>
            <li>Then sign out (at the top of this page) and sign in again: the sign-in asks for your second factor.</li>
          </ol>
        </>
      ));
      return undefined;
    }
    if (!can(entity.role, needs)) {
      page(reply, 403, { title: 'Not allowed', ...chrome, entity },
        <p role="alert">Your role ({roleLabel[entity.role]}) cannot do this. Ask an administrator of {entity.entity_name}.</p>);
      return undefined;
    }
    return { ...s, entity };
  };
  const csrfOk = (request: FastifyRequest, s: { raw: string }) => csrfValid(request, key, s.raw);
  return { member, csrfOk };
}
