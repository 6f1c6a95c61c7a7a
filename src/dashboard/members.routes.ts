// Operator API: who may use an entity's dashboard, with which role (TeamService: an
// invitation of an address without an account makes one and a link to choose its password,
// answered here once as invitation_url). An entity keeps at least one admin.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { problems } from '../platform/http/problem.ts';
import { problemResponses, StringEnum, Uuid } from '../platform/http/schemas.ts';
import { ROLES, type Role } from './members.ts';
import { LAST_ADMIN, type MembersDeps, TeamService } from './team.service.ts';

export type { MembersDeps };

const auth = { schemes: ['admin' as const] };
const tags = ['Operator'];
const security = [{ operatorToken: [] }];

const Member = Type.Object({
  user_id: Uuid(), email: Type.String(), role: StringEnum(ROLES, 'admin: keys, webhooks, users; operator: capture, refund, void, links; viewer: read only'),
  invited_by: Type.Union([Type.String(), Type.Null()]), created_at: Type.String({ format: 'date-time' }),
}, { title: 'DashboardMember' });

export async function membersRoutes(root: FastifyInstance, deps: MembersDeps) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const team = new TeamService(deps);
  const EntityParams = Type.Object({ id: Uuid('Entity id') });
  const MemberParams = Type.Object({ id: Uuid('Entity id'), user_id: Uuid('The member\'s identity user id') });
  const view = async (entityId: string, userId: string) => {
    const m = (await team.of(entityId)).find((x) => x.user_id === userId);
    if (!m) throw problems.notFound('This user is not a member of the entity.');
    return { ...m, created_at: m.created_at.toISOString() };
  };
  const change = async (entityId: string, userId: string, role: Role | undefined) => {
    const outcome = await team.change(entityId, userId, role);
    if (outcome === 'not_member') throw problems.notFound('This user is not a member of the entity.');
    if (outcome === 'last_admin') throw problems.conflict(LAST_ADMIN);
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
    const r = await team.invite(request.params.id, request.body.email, request.body.role, 'operator', { trustExistingAccount: true });
    reply.header('cache-control', 'no-store');
    return reply.code(201).send({ ...(await view(request.params.id, r.user_id)), invited: r.invited, ...(r.invitation_url ? { invitation_url: r.invitation_url } : {}) });
  });

  app.get('/admin/v1/entities/:id/members', {
    config: { auth },
    schema: { tags, security, summary: 'List the entity\'s dashboard members', params: EntityParams, response: { 200: Type.Object({ data: Type.Array(Member) }), ...problemResponses(400, 401, 404) } },
  }, async (request) => {
    await deps.entities.get(request.params.id);
    return { data: (await team.of(request.params.id)).map((m) => ({ ...m, created_at: m.created_at.toISOString() })) };
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
