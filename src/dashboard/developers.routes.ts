// The Developers page (admins): the entity's API keys: create (the key is shown once, in
// that answer only), revoke. The same EntitiesService as the operator API.
import type { FastifyInstance, FastifyReply } from 'fastify';
import { Type } from 'typebox';
import { Problem } from '../platform/http/problem.ts';
import type { ExtraDeps, Member } from './links-keys.routes.ts';
import { actionBy } from './access.tsx';
import { EntityParams, IdParams } from './params.ts';
import { formExpired, layoutOf, notFound } from './parts.tsx';
import { DevelopersBody, type KeysMessage } from './developers-page.tsx';
import { page } from './views.ts';

export async function developerRoutes(app: FastifyInstance, deps: ExtraDeps) {
  const form = Type.Record(Type.String(), Type.String({ maxLength: 2048 }));
  const keysPage = async (reply: FastifyReply, m: Member, message: KeysMessage, status = 200) =>
    page(reply, status, layoutOf(m, 'Developers', 'developers'), DevelopersBody({ m, keys: await deps.entities.listApiKeys(m.entity.entity_id), message }));

  app.get('/dashboard/:entity/developers', { schema: { hide: true, params: EntityParams } }, async (request, reply) => {
    const m = await deps.member(request, reply, 'admin');
    if (!m) return reply;
    return keysPage(reply, m, (request.query as Record<string, unknown>).revoked === '1' ? { revoked: true } : undefined);
  });

  app.post('/dashboard/:entity/developers/api-keys', { schema: { hide: true, params: EntityParams, body: form } }, async (request, reply) => {
    const m = await deps.member(request, reply, 'admin');
    if (!m) return reply;
    if (!deps.csrfOk(request, m)) return formExpired(reply, m);
    const key = await deps.entities.createApiKey(m.entity.entity_id);
    await deps.dashboard.recordPlain(actionBy(m), 'Create API key');
    // Shown in this answer only (no-store); it is not kept anywhere readable.
    return keysPage(reply, m, { newKey: key.api_key }, 201);
  });

  app.post('/dashboard/:entity/developers/api-keys/:id/revoke', { schema: { hide: true, params: IdParams, body: form } }, async (request, reply) => {
    const m = await deps.member(request, reply, 'admin');
    if (!m) return reply;
    if (!deps.csrfOk(request, m)) return formExpired(reply, m);
    let revoked;
    try {
      revoked = await deps.entities.revokeApiKey(m.entity.entity_id, (request.params as { id: string }).id);
    } catch (err) {
      if (err instanceof Problem && err.status === 404) return notFound(reply, m, 'There is no such key here.');
      throw err;
    }
    deps.onApiKeyRevoked(revoked.id);
    await deps.dashboard.recordPlain(actionBy(m), 'Revoke API key');
    return reply.redirect(`/dashboard/${m.entity.entity_id}/developers?revoked=1`, 303);
  });
}
