// Sign-up through the SDK (POST /identity/v1/signup: a mail either way, idp/signup.ts) and
// the confirmation page of the mailed link. GET only shows the form (a mail scanner that
// opens links does not use the token); its post creates the account, starts the sign-in
// session and goes back to the application when it said where.
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { isProblem, PROBLEM_TYPE } from '../../platform/http/problem.ts';
import { type IdentityService, THROTTLE } from '../idp/idp.service.ts';
import { PASSWORD_LENGTH, passwordProblem } from '../idp/password-policy.ts';
import type { SignUps } from '../idp/signup.ts';
import type { LoginPages } from '../login/pages.ts';
import { amrOf } from '../mfa/amr.ts';
import { SDK_JSON, sdkError } from './errors.ts';
import { EMAIL, type SdkService } from './sdk.service.ts';
import { identityPage, linkExpired } from './pages.tsx';

export async function signupRoutes(root: FastifyInstance, { sdk, identity, pages, signups }: { sdk: SdkService; identity: IdentityService; pages: LoginPages; signups: SignUps }) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();

  app.post('/identity/v1/signup', {
    config: SDK_JSON,
    schema: {
      hide: true, summary: 'Sign-up: a mail to the address (a confirmation link, or a notice to an existing account); {} either way',
      body: Type.Object({
        client_id: Type.String({ maxLength: 100 }), redirect_url: Type.Optional(Type.String({ maxLength: 2048 })), scope: Type.Optional(Type.String({ maxLength: 500 })),
        return_to_after_email_confirmation: Type.Optional(Type.String({ maxLength: 2048 })),
        data: Type.Object({
          email: Type.Optional(Type.String({ maxLength: 254 })), password: Type.String({ maxLength: PASSWORD_LENGTH.max }),
          given_name: Type.Optional(Type.String({ maxLength: 100 })), family_name: Type.Optional(Type.String({ maxLength: 100 })),
        }, { additionalProperties: true }),
      }, { additionalProperties: true }),
    },
  }, async (request, reply) => {
    const a = await sdk.application(request.body.client_id);
    const { data } = request.body;
    const email = (data.email ?? '').trim();
    if (!EMAIL.test(email) || email.length > 254) {
      throw sdkError(400, 'invalid_request', 'Enter a valid email address.', { error_details: [{ field: 'data.email', message: 'Enter a valid email address.', code: 'email' }] });
    }
    // The same answer whether the address has an account or not (idp/signup.ts): {} (no
    // tkn: the SDK resolves with {}), and a mail; the new user's link creates the account.
    try {
      await signups.request({
        email, password: data.password, given_name: data.given_name, family_name: data.family_name, client_id: a.client_id, app_name: a.name,
        return_to: await sdk.allowedReturn(request.body.return_to_after_email_confirmation ?? request.body.redirect_url, a),
      }, request.ip);
    } catch (err) {
      const weak = passwordProblem(err); // the password rule (password-policy.ts)
      if (weak) throw sdkError(400, 'invalid_request', weak, { error_details: [{ field: 'data.password', message: weak, code: 'password.policy' }] });
      if (isProblem(err, PROBLEM_TYPE.tooManyRequests)) {
        reply.header('retry-after', String(THROTTLE.windowSeconds));
        throw sdkError(429, 'too_many_attempts', err.detail ?? 'Too many sign-ups.', {}, { 'retry-after': String(THROTTLE.windowSeconds) });
      }
      throw err;
    }
    return {};
  });

  const confirmForm = (reply: FastifyReply, token: string) => identityPage(reply, 200, 'Create your account', <>
    <p>Confirm your address to create your account and sign in.</p>
    <form method="post" action="/identity/v1/signup/confirm">
      <input type="hidden" name="token" value={token} />
      <button type="submit">Create my account</button>
    </form>
  </>, { formAction: 'any' }); // its post ends at the application: no form-action (see login/pages.ts endsAtClient)
  const expired = (reply: FastifyReply) => linkExpired(reply, 'Sign in, or sign up again.');

  app.get('/identity/v1/signup/confirm', {
    schema: { hide: true, querystring: Type.Object({ token: Type.String({ maxLength: 100 }) }) },
  }, async (request, reply) => ((await signups.valid(request.query.token)) ? confirmForm(reply, request.query.token) : expired(reply)));

  app.post('/identity/v1/signup/confirm', {
    schema: { hide: true, body: Type.Object({ token: Type.String({ maxLength: 100 }) }, { additionalProperties: true }) },
  }, async (request, reply) => {
    const done = await signups.confirm(request.body.token);
    if (!done) return expired(reply);
    if (done === 'taken') return identityPage(reply, 409, 'You already have an account', <p role="alert">An account with this address exists already: sign in with its password.</p>);
    pages.setSession(reply, await identity.newSession(done.user.id, amrOf('mail')));
    if (done.return_to) return reply.redirect(done.return_to, 303);
    return identityPage(reply, 200, 'Your account is ready', <p role="status">Your account is ready, and you are signed in.</p>);
  });
}
