// Social login's HTTP: the sign-in page's "Continue with …" start, the upstream's callback
// (then the consent step and the code, as after a password sign-in), and the operator API
// that configures upstream providers (the client secret is stored encrypted, never shown).
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { problems } from '../../platform/http/problem.ts';
import { problemResponses } from '../../platform/http/schemas.ts';
import { AuthorizeError, type IdentityService } from '../idp/idp.service.ts';
import { clearCookie, readSignedCookie, setSignedCookie } from '../../web/index.ts';
import { type LoginPages, refusedPage } from '../login/pages.ts';
import type { Complete } from '../login/consent.routes.ts';
import type { SecondStep } from '../mfa/mfa.routes.ts';
import { type Federation, FederationError } from './federation.ts';
import { amrOf } from '../mfa/amr.ts';

const STATE_COOKIE = 'payd_idp_federation';

export async function federationRoutes(root: FastifyInstance, deps: { identity: IdentityService; pages: LoginPages; complete: Complete; secondStep: SecondStep; federation: Federation; allowHttpLocalhost: boolean }) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  // Bound to this browser (a signed cookie): the callback must come back to the browser that started it.
  const stateScope = deps.pages.cookies.shortScope('/oauth/federation');
  const failed = (reply: FastifyReply, message: string) => refusedPage(reply, 'Sign-in did not complete', message, 400, 'Go back to the application and sign in again.');

  app.get('/oauth/federation/:provider/start', { schema: { hide: true, params: Type.Object({ provider: Type.String({ maxLength: 40 }) }) } }, async (request, reply) => {
    let v;
    try {
      v = await deps.identity.validate(request.query as Record<string, unknown>);
    } catch (err) {
      if (err instanceof AuthorizeError) return deps.pages.errorPage(reply, err);
      throw err;
    }
    try {
      const { location, state } = await deps.federation.start((request.params as { provider: string }).provider, v.request);
      setSignedCookie(reply, STATE_COOKIE, state, stateScope, 600);
      return reply.redirect(location, 303);
    } catch (err) {
      if (err instanceof FederationError) return failed(reply, err.message);
      throw err;
    }
  });

  app.get('/oauth/federation/callback', { schema: { hide: true } }, async (request, reply) => {
    clearCookie(reply, STATE_COOKIE, stateScope);
    let done;
    try {
      done = await deps.federation.callback(request.query as Record<string, unknown>, readSignedCookie(request, STATE_COOKIE));
    } catch (err) {
      if (err instanceof FederationError) return failed(reply, err.message);
      throw err;
    }
    // The authorization request is checked again (the application may have changed meanwhile).
    let v;
    try {
      v = await deps.identity.validate({ ...done.request, prompt: done.request.prompt?.join(' '), max_age: done.request.max_age?.toString() });
    } catch (err) {
      if (err instanceof AuthorizeError) return deps.pages.errorPage(reply, err);
      throw err;
    }
    const stepped = await deps.secondStep(request, reply, done.user, { v }, 'social'); // the upstream's sign-in is not this account's second factor
    if (stepped) return stepped;
    const session = await deps.identity.newSession(done.user.id, amrOf('fed'));
    deps.pages.setSession(reply, session);
    return deps.complete(request, reply, v, done.user, new Date(), 'social', session);
  });

  const admin = { auth: { schemes: ['admin' as const] } };
  const Provider = Type.Object({
    id: Type.String(), name: Type.String(), issuer: Type.String(), client_id: Type.String(), scopes: Type.String(), created_at: Type.String({ format: 'date-time' }),
  }, { title: 'UpstreamProvider' });
  app.post('/admin/v1/identity/providers', {
    config: admin,
    schema: {
      tags: ['Operator'], summary: 'Add an upstream OpenID Connect provider (social login)', security: [{ operatorToken: [] }],
      description: 'The sign-in page offers "Continue with {name}". Register payd\'s callback, {base}/oauth/federation/callback, at the upstream. The client secret is stored encrypted and never shown again.',
      body: Type.Object({
        id: Type.String({ pattern: '^[a-z0-9][a-z0-9-]{0,39}$', description: 'Short name in URLs' }),
        name: Type.String({ minLength: 1, maxLength: 100, description: 'Shown on the button' }),
        issuer: Type.String({ maxLength: 2048, description: 'The upstream issuer; its /.well-known/openid-configuration is read' }),
        client_id: Type.String({ minLength: 1, maxLength: 200 }), client_secret: Type.String({ minLength: 1, maxLength: 500 }),
        scopes: Type.Optional(Type.String({ maxLength: 500, pattern: '(^| )openid( |$)', description: 'Default: openid email profile' })),
      }, { additionalProperties: false }),
      response: { 201: Provider, ...problemResponses(400, 401, 409) },
    },
  }, async (request, reply) => {
    const b = request.body;
    let issuer: URL;
    try {
      issuer = new URL(b.issuer);
    } catch {
      throw problems.invalidField('issuer', 'must be an absolute URL');
    }
    const local = issuer.hostname === 'localhost' || issuer.hostname === '127.0.0.1';
    if (issuer.protocol !== 'https:' && !(deps.allowHttpLocalhost && local && issuer.protocol === 'http:')) {
      throw problems.invalidField('issuer', 'must use https (http is allowed on localhost in development only)');
    }
    if (!(await deps.federation.create(b))) throw problems.conflict(`A provider named ${b.id} exists already.`);
    const created = (await deps.federation.providers()).find((p) => p.id === b.id)!;
    return reply.code(201).send({ ...created, created_at: created.created_at.toISOString() });
  });

  app.get('/admin/v1/identity/providers', {
    config: admin,
    schema: { tags: ['Operator'], summary: 'List the upstream providers (never their secrets)', security: [{ operatorToken: [] }], response: { 200: Type.Object({ data: Type.Array(Provider) }), ...problemResponses(401) } },
  }, async () => ({ data: (await deps.federation.providers()).map((p) => ({ ...p, created_at: p.created_at.toISOString() })) }));
}
