// The SDK's view of the signed-in user: the profile of an access token (userinfo), whether
// the browser has a sign-in session (sso/data), and the SDK's logout.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { IdentityService } from '../idp/idp.service.ts';
import type { LoginPages } from '../login/pages.ts';
import { SDK_JSON } from './errors.ts';
import type { SdkService } from './sdk.service.ts';
import { identityPage } from './pages.tsx';

/** The origin of the page that sent the browser here (Origin, else Referer), if it says. */
function originOf(request: FastifyRequest): string | undefined {
  const origin = request.headers.origin;
  if (typeof origin === 'string' && origin !== 'null') return origin;
  const referer = request.headers.referer;
  return typeof referer === 'string' && URL.canParse(referer) ? new URL(referer).origin : undefined;
}

export async function sdkSessionRoutes(root: FastifyInstance, { sdk, identity, pages, baseUrl }: { sdk: SdkService; identity: IdentityService; pages: LoginPages; baseUrl: string }) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();

  app.get('/identity/v1/userinfo', {
    config: SDK_JSON,
    schema: { hide: true, summary: 'The profile of the access token\'s user', querystring: Type.Object({ fields: Type.Optional(Type.String({ maxLength: 1000 })) }, { additionalProperties: true }) },
  }, async (request) => {
    const auth = request.headers.authorization;
    const claims = await identity.userinfo(auth?.startsWith('Bearer ') ? auth.slice(7) : undefined);
    const { sub, ...rest } = claims as Record<string, unknown> & { sub: string };
    const profile: Record<string, unknown> = { id: sub, ...rest };
    if (rest.given_name || rest.family_name) profile.name = [rest.given_name, rest.family_name].filter(Boolean).join(' ');
    const fields = request.query.fields?.split(',').map((f) => f.trim()).filter(Boolean);
    return fields?.length ? Object.fromEntries(Object.entries(profile).filter(([k]) => k === 'id' || fields.includes(k))) : profile;
  });

  app.get('/identity/v1/sso/data', {
    config: SDK_JSON,
    schema: { hide: true, summary: 'Whether the browser has a sign-in session, and whose', querystring: Type.Object({ client_id: Type.String({ maxLength: 100 }) }) },
  }, async (request, reply) => {
    await sdk.application(request.query.client_id);
    reply.header('cache-control', 'no-store');
    const session = await identity.sessionUser(pages.session(request));
    if (!session) return { is_authenticated: false };
    const last = (await identity.events(session.user.id))[0];
    const { user } = session;
    return {
      is_authenticated: true, email: user.email, ...(user.given_name || user.family_name ? { name: [user.given_name, user.family_name].filter(Boolean).join(' ') } : {}),
      last_login_type: last?.auth_type ?? 'password', has_password: true, social_providers: [],
    };
  });

  /**
   * The SDK's logout (a navigation). A request from a page of an Allowed Origin (the
   * browser's Origin or Referer) signs out at once; from anywhere else a signed-in browser
   * is asked first (the hosted confirmation), so that another site cannot sign the user
   * out with a link. redirect_to: only an Allowed Callback URL or a URL on an Allowed Origin.
   */
  app.get('/identity/v1/logout', {
    schema: { hide: true, summary: 'Logout (the SDK\'s)', querystring: Type.Object({ redirect_to: Type.Optional(Type.String({ maxLength: 2048 })) }, { additionalProperties: true }) },
  }, async (request, reply) => {
    const cookie = pages.session(request);
    const session = await identity.sessionUser(cookie);
    const from = originOf(request);
    const proven = request.headers['sec-fetch-site'] === 'same-origin' || (from !== undefined && (from === new URL(baseUrl).origin || await sdk.originAllowed(from)));
    if (session && !proven) return pages.logoutConfirm(request, reply, {});
    await identity.endSession(cookie);
    pages.clearSession(reply);
    const next = await sdk.allowedReturn(request.query.redirect_to);
    if (next) return reply.redirect(next, 302);
    return identityPage(reply, 200, 'You are signed out', <p role="status">You are signed out.</p>);
  });
}
