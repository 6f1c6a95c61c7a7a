// The second factor's pages (docs/identity.md "Second factor"), assembled: the sign-in's
// second step (second-step.routes.ts), the signed-in user's security page
// (/oauth/account/security: security.routes.ts for the authenticator app and recovery
// codes, security-passkeys.routes.ts for passkeys; what they share in
// account-security.ts), all rendered by mfa-pages.tsx on the web layer with the login
// pages' layout, CSRF token and strict CSP. Only the passkey forms run a script, payd's
// own (passkey-script.ts, script-src 'self'): it reads the options from an inert JSON
// element, calls navigator.credentials and posts the answer as the form's `credential`.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppRow, AuthRequest, IdentityService } from '../idp/idp.service.ts';
import type { LoginPages } from '../login/pages.ts';
import type { Complete } from '../login/consent.routes.ts';
import type { Mfa, SecondFactor } from './mfa.ts';
import type { Passkeys } from './passkeys.ts';
import { accountSecurity } from './account-security.ts';
import { secondStepRoutes } from './second-step.routes.ts';
import { securityRoutes } from './security.routes.ts';
import { securityPasskeyRoutes } from './security-passkeys.routes.ts';

export { ACCOUNT_SECURITY } from './mfa-pages.tsx';

/** The second factor a sign-in passed: recorded in its login event; amr (RFC 8176) for the lead's id_token work. */
export interface FactorUsed { factor: SecondFactor; amr: 'otp' | 'hwk' | 'swk' }

/** The sign-in's second step for a user whose password passed: undefined when the user has no factor. */
export type SecondStep = (
  request: FastifyRequest, reply: FastifyReply, user: { id: string }, target: { v: { request: AuthRequest; app: AppRow } } | { next: 'security' | 'applications' },
  how?: 'password' | 'social',
) => Promise<FastifyReply | undefined>;

export async function mfaRoutes(app: FastifyInstance, { identity, pages, mfa, passkeys, complete, consoleRequiresSecondFactor }: {
  identity: IdentityService; pages: LoginPages; mfa: Mfa; passkeys: Passkeys; complete: () => Complete; consoleRequiresSecondFactor: boolean;
}): Promise<SecondStep> {
  const account = accountSecurity({ identity, pages, mfa, passkeys, consoleRequiresSecondFactor });
  const step = await secondStepRoutes(app, { identity, pages, mfa, passkeys, complete, account });
  await securityRoutes(app, { identity, pages, mfa, account, step });
  await securityPasskeyRoutes(app, { pages, mfa, passkeys, account });
  return step;
}
