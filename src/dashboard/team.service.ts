// An entity's dashboard team, for the operator API (members.routes.ts) and the Team page
// (members-page.routes.ts): invitations, roles, removals, and the team's settings (second
// factor, time zone). An entity keeps at least one admin (membersRepo.change checks it
// under a lock of the entity's member rows). Inviting an address that has no identity
// account creates one without a usable password and a link to choose it (the password
// reset page, valid 7 days, single use, its token stored only hashed): mailed through SMTP
// when configured (the outbox keeps the mail with the link redacted), and answered once to
// whoever invited (invitation_url; the Team page shows it once).
import { randomBytes } from 'node:crypto';
import type { Db } from '../platform/db/index.ts';
import { sha256 } from '../platform/crypto/secrets.ts';
import { problems } from '../platform/http/problem.ts';
import type { EntitiesService } from '../admin/entities.service.ts';
import { type Role, membersRepo } from '../admin/members.repo.ts';
import type { IdentityService } from '../identity/idp/idp.service.ts';
import { idpRepo } from '../identity/idp/idp.repo.ts';
import type { Mailer } from '../identity/sdk/mail.ts';
import { sdkRepo } from '../identity/sdk/sdk.repo.ts';
import type { ActionBy } from './dashboard.service.ts';

export const INVITE_TTL_SECONDS = 7 * 86_400;
export const LAST_ADMIN = 'An entity keeps at least one admin: make another member admin first.';

export interface MembersDeps {
  db: Db;
  entities: EntitiesService;
  identity: IdentityService;
  mailer: Mailer;
  baseUrl: string;
}

export class TeamService {
  constructor(private readonly deps: MembersDeps) {}

  /** The entity's members (email, role, since, whether they have a second factor). */
  of(entityId: string) {
    return membersRepo.of(this.deps.db, entityId);
  }

  /** Invitations of existing accounts waiting for their link. */
  pendingOf(entityId: string) {
    return membersRepo.pendingOf(this.deps.db, entityId);
  }

  /** Changes a member's role, or removes them (role undefined), unless that leaves the entity without an admin. */
  change(entityId: string, userId: string, role: Role | undefined) {
    return membersRepo.change(this.deps.db, entityId, userId, role);
  }

  /**
   * Makes the address a member of the entity. A new address gets an account without a
   * usable password and a link to choose one (the membership starts at once: nobody can sign
   * in to it before the link is used). An account that is already privileged (a console
   * administrator or a dashboard member elsewhere: authority.ts keeps its credentials out
   * of everyone's reach) is added at once. Any other existing account may have been
   * registered by someone else than the mailbox's owner (a Management API application with
   * create:users, an upstream of social login): unless the caller vouches for it (the
   * operator API), the invitation waits for its mailed link, whose redemption sets a new
   * password and ends every session of the account (dashboard_invitations, migration 0037).
   */
  async invite(entityId: string, email: string, role: Role, invitedBy: string,
    opts: { trustExistingAccount: boolean }): Promise<{ user_id: string; invited: boolean; pending: boolean; invitation_url?: string }> {
    const { db, baseUrl } = this.deps;
    const entity = await this.deps.entities.get(entityId);
    let user = await idpRepo.userByEmail(db, email);
    const link = async (userId: string) => {
      const token = randomBytes(32).toString('base64url');
      const hash = sha256(token).toString('hex');
      await sdkRepo.insertReset(db, { token_hash: hash, user_id: userId, client_id: null, return_to: `${baseUrl}/dashboard`, ttlSeconds: INVITE_TTL_SECONDS });
      return { hash, url: `${baseUrl}/identity/v1/password/reset?token=${token}` };
    };
    if (!user) {
      // No usable password until the invitee chooses one through the mailed link.
      await this.deps.identity.createUser({ email, password: randomBytes(32).toString('base64url'), email_verified: false });
      user = (await idpRepo.userByEmail(db, email))!;
      const { url } = await link(user.id);
      await this.deps.mailer.send(email, `You are invited to ${entity.name} on payd`,
        `You are invited to the payd dashboard of ${entity.name}, as ${role}.\n\n`
        + `Choose your password within 7 days with this link, then sign in at ${baseUrl}/dashboard:\n`
        + `${url}\n`);
      await membersRepo.upsert(db, entityId, user.id, role, invitedBy);
      return { user_id: user.id, invited: true, pending: false, invitation_url: url };
    }
    const standing = await idpRepo.lockStanding(db, user.id);
    if (!opts.trustExistingAccount && standing && !standing.is_admin && !standing.dashboard_member) {
      const { hash, url } = await link(user.id);
      await membersRepo.insertInvitation(db, { reset_hash: hash, entity_id: entityId, user_id: user.id, role, invited_by: invitedBy });
      await this.deps.mailer.send(email, `You are invited to ${entity.name} on payd`,
        `You are invited to the payd dashboard of ${entity.name}, as ${role}.\n\n`
        + `This address already has an account on payd. To accept, choose a new password within 7 days with this link `
        + `(it ends every session of the account), then sign in at ${baseUrl}/dashboard:\n${url}\n`);
      return { user_id: user.id, invited: true, pending: true, invitation_url: url };
    }
    // Already a member: a role change, which must leave the entity an admin.
    if ((await membersRepo.change(db, entityId, user.id, role)) === 'last_admin') throw problems.conflict(LAST_ADMIN);
    await membersRepo.upsert(db, entityId, user.id, role, invitedBy);
    return { user_id: user.id, invited: false, pending: false };
  }

  /** The team's setting (its members sign in with a second factor), recorded as the user's action in the same transaction. */
  async setSecondFactorRequired(by: ActionBy, required: boolean): Promise<void> {
    await this.deps.db.transaction(async (tx) => {
      await membersRepo.setSecondFactorRequired(tx, by.entity_id, required, by.user_id);
      await membersRepo.recordAction(tx, { ...by, action: required ? 'Require a second factor for the team' : 'Stop requiring a second factor', payment_id: null, idempotency_key: null, amount: null });
    });
  }

  /** The database's spelling of a zone (the home page buckets days with AT TIME ZONE), or undefined when it does not know it. */
  zoneName(zone: string): Promise<string | undefined> {
    return membersRepo.zoneName(this.deps.db, zone);
  }

  /** The merchant's time zone (a name zoneName gave), recorded as the user's action in the same transaction. */
  async setTimeZone(by: ActionBy, zone: string): Promise<void> {
    await this.deps.db.transaction(async (tx) => {
      await membersRepo.setTimeZone(tx, by.entity_id, zone, by.user_id);
      await membersRepo.recordAction(tx, { ...by, action: `Set the time zone to ${zone}`, payment_id: null, idempotency_key: null, amount: null });
    });
  }
}
