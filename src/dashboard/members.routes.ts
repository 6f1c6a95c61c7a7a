// Operator API: who may use an entity's dashboard, with which role. Inviting an address
// that has no identity account creates one without a usable password and a link to choose
// it (the password reset page, valid 7 days, single use, its token stored only hashed):
// mailed through SMTP when configured (the outbox keeps the mail with the link redacted),
// and answered once to whoever invited (invitation_url; the Team page shows it once).
// An entity keeps at least one admin.
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Db } from '../platform/db/index.ts';
import { sha256 } from '../platform/crypto/secrets.ts';
import { problems } from '../platform/http/problem.ts';
import { problemResponses, StringEnum, Uuid } from '../platform/http/schemas.ts';
import type { EntitiesService } from '../admin/entities.service.ts';
import type { IdentityService } from '../identity/idp/idp.service.ts';
import { idpRepo } from '../identity/idp/idp.repo.ts';
import type { Mailer } from '../identity/sdk/mail.ts';
import { sdkRepo } from '../identity/sdk/sdk.repo.ts';
import { ROLES, type Role, membersRepo } from './members.ts';

export const INVITE_TTL_SECONDS = 7 * 86_400;
const auth = { schemes: ['admin' as const] };
const tags = ['Operator'];
const security = [{ operatorToken: [] }];

const Member = Type.Object({
  user_id: Uuid(), email: Type.String(), role: StringEnum(ROLES, 'admin: keys, webhooks, users; operator: capture, refund, void, links; viewer: read only'),
  invited_by: Type.Union([Type.String(), Type.Null()]), created_at: Type.String({ format: 'date-time' }),
}, { title: 'DashboardMember' });

export interface MembersDeps {
  db: Db;
  entities: EntitiesService;
  identity: IdentityService;
  mailer: Mailer;
  baseUrl: string;
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
export async function inviteMember(deps: MembersDeps, entityId: string, email: string, role: Role, invitedBy: string,
  opts: { trustExistingAccount: boolean }): Promise<{ user_id: string; invited: boolean; pending: boolean; invitation_url?: string }> {
  const entity = await deps.entities.get(entityId);
  let user = await idpRepo.userByEmail(deps.db, email);
  const link = async (userId: string) => {
    const token = randomBytes(32).toString('base64url');
    const hash = sha256(token).toString('hex');
    await sdkRepo.insertReset(deps.db, { token_hash: hash, user_id: userId, client_id: null, return_to: `${deps.baseUrl}/dashboard`, ttlSeconds: INVITE_TTL_SECONDS });
    return { hash, url: `${deps.baseUrl}/identity/v1/password/reset?token=${token}` };
  };
  if (!user) {
    // No usable password until the invitee chooses one through the mailed link.
    await deps.identity.createUser({ email, password: randomBytes(32).toString('base64url'), email_verified: false });
    user = (await idpRepo.userByEmail(deps.db, email))!;
    const { url } = await link(user.id);
    await deps.mailer.send(email, `You are invited to ${entity.name} on payd`,
      `You are invited to the payd dashboard of ${entity.name}, as ${role}.\n\n`
      + `Choose your password within 7 days with this link, then sign in at ${deps.baseUrl}/dashboard:\n`
      + `${url}\n`);
    await membersRepo.upsert(deps.db, entityId, user.id, role, invitedBy);
    return { user_id: user.id, invited: true, pending: false, invitation_url: url };
  }
  const standing = await idpRepo.lockStanding(deps.db, user.id);
  if (!opts.trustExistingAccount && standing && !standing.is_admin && !standing.dashboard_member) {
    const { hash, url } = await link(user.id);
    await membersRepo.insertInvitation(deps.db, { reset_hash: hash, entity_id: entityId, user_id: user.id, role, invited_by: invitedBy });
    await deps.mailer.send(email, `You are invited to ${entity.name} on payd`,
      `You are invited to the payd dashboard of ${entity.name}, as ${role}.\n\n`
      + `This address already has an account on payd. To accept, choose a new password within 7 days with this link `
      + `(it ends every session of the account), then sign in at ${deps.baseUrl}/dashboard:\n${url}\n`);
    return { user_id: user.id, invited: true, pending: true, invitation_url: url };
  }
  // Already a member: a role change, which must leave the entity an admin.
  if ((await membersRepo.change(deps.db, entityId, user.id, role)) === 'last_admin') {
    throw problems.conflict('An entity keeps at least one admin: make another member admin first.');
  }
  await membersRepo.upsert(deps.db, entityId, user.id, role, invitedBy);
  return { user_id: user.id, invited: false, pending: false };
}

export async function membersRoutes(root: FastifyInstance, deps: MembersDeps) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const EntityParams = Type.Object({ id: Uuid('Entity id') });
  const MemberParams = Type.Object({ id: Uuid('Entity id'), user_id: Uuid('The member\'s identity user id') });
  const view = async (entityId: string, userId: string) => {
    const m = (await membersRepo.of(deps.db, entityId)).find((x) => x.user_id === userId);
    if (!m) throw problems.notFound('This user is not a member of the entity.');
    return { ...m, created_at: m.created_at.toISOString() };
  };
  const change = async (entityId: string, userId: string, role: Role | undefined) => {
    const outcome = await membersRepo.change(deps.db, entityId, userId, role);
    if (outcome === 'not_member') throw problems.notFound('This user is not a member of the entity.');
    if (outcome === 'last_admin') throw problems.conflict('An entity keeps at least one admin: make another member admin first.');
  };

  app.post('/admin/v1/entities/:id/members', {
    config: { auth },
    schema: {
      tags, security, summary: 'Invite a user to the entity\'s dashboard (or change their role)',
      description: 'A new address gets an identity account and a link to choose a password (7 days, single use): mailed when SMTP is configured, ' +
        'and answered here once as invitation_url (payd keeps only its hash; the outbox keeps the mail with the link redacted). An existing user is added at once.',
      params: EntityParams,
      body: Type.Object({ email: Type.String({ format: 'email', maxLength: 254 }), role: StringEnum(ROLES, 'The role in this entity') }, { additionalProperties: false }),
      response: { 201: Type.Intersect([Member, Type.Object({
        invited: Type.Boolean({ description: 'The address had no account: one was made, with an invitation link' }),
        invitation_url: Type.Optional(Type.String({ description: 'The invitation link, shown this once (not stored: give it to the invitee if no mail goes out)' })),
      })]), ...problemResponses(400, 401, 404, 409) },
    },
  }, async (request, reply) => {
    // The operator vouches for an existing account (it runs the identity provider).
    const r = await inviteMember(deps, request.params.id, request.body.email, request.body.role, 'operator', { trustExistingAccount: true });
    reply.header('cache-control', 'no-store');
    return reply.code(201).send({ ...(await view(request.params.id, r.user_id)), invited: r.invited, ...(r.invitation_url ? { invitation_url: r.invitation_url } : {}) });
  });

  app.get('/admin/v1/entities/:id/members', {
    config: { auth },
    schema: { tags, security, summary: 'List the entity\'s dashboard members', params: EntityParams, response: { 200: Type.Object({ data: Type.Array(Member) }), ...problemResponses(400, 401, 404) } },
  }, async (request) => {
    await deps.entities.get(request.params.id);
    return { data: (await membersRepo.of(deps.db, request.params.id)).map((m) => ({ ...m, created_at: m.created_at.toISOString() })) };
  });

  app.patch('/admin/v1/entities/:id/members/:user_id', {
    config: { auth },
    schema: {
      tags, security, summary: 'Change a member\'s role', params: MemberParams,
      body: Type.Object({ role: StringEnum(ROLES, 'The new role') }, { additionalProperties: false }),
      response: { 200: Member, ...problemResponses(400, 401, 404, 409) },
    },
  }, async (request) => {
    await change(request.params.id, request.params.user_id, request.body.role);
    return view(request.params.id, request.params.user_id);
  });

  app.delete('/admin/v1/entities/:id/members/:user_id', {
    config: { auth },
    schema: { tags, security, summary: 'Remove a member from the entity\'s dashboard', params: MemberParams, response: { 204: Type.Null({ description: 'Removed' }), ...problemResponses(400, 401, 404, 409) } },
  }, async (request, reply) => {
    await change(request.params.id, request.params.user_id, undefined);
    return reply.code(204).send(null);
  });
}
