// A forgotten password: the SDK's request (POST /identity/v1/forgot-password), the hosted
// sign-in page's "Forgot password?" (/oauth/authorize/forgot, the dashboard's too), and
// the mailed link's page that sets the new password (/identity/v1/password/reset). The
// answer is the same whether the address has an account or not.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { AuthRequest, IdentityService } from '../idp/idp.service.ts';
import { PASSWORD_LENGTH, passwordProblem } from '../idp/password-policy.ts';
import { type LoginPages, validatedRequest } from '../login/pages.ts';
import { SDK_JSON, sdkError } from './errors.ts';
import { EMAIL, type SdkService } from './sdk.service.ts';
import { identityPage, linkExpired } from './pages.tsx';

export async function resetRoutes(root: FastifyInstance, { sdk, identity, pages, baseUrl }: { sdk: SdkService; identity: IdentityService; pages: LoginPages; baseUrl: string }) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();

  app.post('/identity/v1/forgot-password', {
    config: SDK_JSON,
    schema: {
      hide: true, summary: 'Sends a password reset link (the answer is the same whether the address has an account)',
      body: Type.Object({
        client_id: Type.String({ maxLength: 100 }), email: Type.Optional(Type.String({ maxLength: 254 })),
        redirect_url: Type.Optional(Type.String({ maxLength: 2048 })), return_to: Type.Optional(Type.String({ maxLength: 2048 })),
      }, { additionalProperties: true }),
    },
  }, async (request, reply) => {
    const a = await sdk.application(request.body.client_id);
    const email = (request.body.email ?? '').trim();
    if (!EMAIL.test(email)) throw sdkError(400, 'invalid_request', 'Enter a valid email address.');
    await sdk.sendReset(a, email, await sdk.allowedReturn(request.body.return_to ?? request.body.redirect_url, a));
    return reply.code(204).send();
  });

  // "Forgot password?" of the hosted sign-in page (the dashboard's too): the same reset
  // mail, the same answer whatever the address. The page carries the authorization
  // request, so that the reset page's Continue link starts the sign-in again.
  const forgotPage = (request: FastifyRequest, reply: FastifyReply, r: AuthRequest, appName: string, message?: string, status = 200) => identityPage(reply, status, `Reset your ${appName} password`, (
    <div class="card-box">
      {message ? <p class="payd-error" role="alert">{message}</p> : null}
      <form method="post" action="/oauth/authorize/forgot" class="payd-form">
        {/* the CSRF field and the authorization request's hidden fields */}
        {pages.fields(request, reply, r)}
        <div class="payd-field"><label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required autofocus maxLength={254} /></div>
        <button type="submit" class="payd-pay">Send me a reset link</button>
      </form>
    </div>
  ));
  const validated = (reply: FastifyReply, fields: Record<string, unknown>) => validatedRequest(identity, pages, reply, fields);
  app.get('/oauth/authorize/forgot', { schema: { hide: true } }, async (request, reply) => {
    const v = await validated(reply, request.query as Record<string, unknown>);
    return v ? forgotPage(request, reply, v.request, v.app.name) : reply;
  });
  app.post('/oauth/authorize/forgot', { schema: { hide: true, body: Type.Record(Type.String(), Type.String({ maxLength: 2048 })) } }, async (request, reply) => {
    const body = request.body as Record<string, string>;
    const v = await validated(reply, body);
    if (!v) return reply;
    if (!pages.csrfOk(request, body)) {
      return identityPage(reply, 403, 'Reset refused', <p role="alert">The form expired or did not come from this site. Go back and try again.</p>);
    }
    const email = (body.email ?? '').trim();
    if (!EMAIL.test(email) || email.length > 254) return forgotPage(request, reply, v.request, v.app.name, 'Email: enter a valid email address.', 400);
    const fields = new URLSearchParams(Object.entries(body).filter(([k]) => k !== 'csrf' && k !== 'email'));
    await sdk.sendReset(v.app, email, `${baseUrl}/oauth/authorize?${fields}`);
    return identityPage(reply, 200, 'Check your mail', <div class="card-box"><p role="status">If an account exists for that address, we sent it a link to choose a new password. The link works once, for 30 minutes.</p></div>);
  });

  const resetForm = (reply: FastifyReply, token: string, message?: string, status = 200) => identityPage(reply, status, 'Choose a new password', <>
    {message ? <p class="payd-error" role="alert">{message}</p> : null}
    <form method="post" action="/identity/v1/password/reset">
      <input type="hidden" name="token" value={token} />
      <label for="password">New password ({PASSWORD_LENGTH.min} characters or more)</label>
      <input id="password" name="password" type="password" autocomplete="new-password" required minLength={PASSWORD_LENGTH.min} maxLength={PASSWORD_LENGTH.max} />
      <button type="submit">Change the password</button>
    </form>
  </>);
  const expired = (reply: FastifyReply) => linkExpired(reply, 'Ask for a new one from the sign-in page.');

  app.get('/identity/v1/password/reset', {
    schema: { hide: true, querystring: Type.Object({ token: Type.String({ maxLength: 100 }) }) },
  }, async (request, reply) => ((await sdk.resetValid(request.query.token)) ? resetForm(reply, request.query.token) : expired(reply)));

  // The token in the form is the proof (nobody without the mailed link can post it).
  app.post('/identity/v1/password/reset', {
    schema: { hide: true, body: Type.Object({ token: Type.String({ maxLength: 100 }), password: Type.String({ maxLength: 1024 }) }, { additionalProperties: true }) },
  }, async (request, reply) => {
    const { token, password } = request.body;
    if (!(await sdk.resetValid(token))) return expired(reply);
    let done;
    try {
      done = await sdk.resetPassword(token, password);
    } catch (err) {
      const weak = passwordProblem(err); // the password rule (password-policy.ts)
      if (weak) return resetForm(reply, token, weak, 400);
      throw err;
    }
    if (!done) return expired(reply);
    return identityPage(reply, 200, 'Your password is changed', <>
      <p role="status">Your password is changed. Every session that used the old one is signed out.</p>
      {done.return_to ? <p><a href={done.return_to}>Continue</a></p> : null}
    </>);
  });
}
