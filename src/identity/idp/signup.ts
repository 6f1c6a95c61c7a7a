// Sign-up (the hosted page and the identity SDK) without telling whether an address has
// an account: a sign-up is a request answered "check your mail" in every case. For a new
// address the mail carries a link (24 hours, once, its token stored only as a SHA-256) that
// creates the account and signs the user in; for an address that has an account the mail
// tells its owner that someone tried, with no link. The password is checked by the one
// rule and hashed in both cases (the same work, the same time), the sign-up throttle
// counts both, and at most 3 such mails go to one address an hour.
import { randomBytes, randomUUID } from 'node:crypto';
import type { Db } from '../../platform/db/index.ts';
import { sha256 } from '../../platform/crypto/secrets.ts';
import type { Mailer } from '../sdk/mail.ts';
import type { AuthRequest, IdentityService } from './idp.service.ts';
import { type UserRow, idpRepo } from './idp.repo.ts';
import { hashPassword } from './passwords.ts';
import { signupRepo } from './signup.repo.ts';

export const SIGNUP_TTL_SECONDS = 24 * 3600;
/** Sign-up mails (links or notices) per address per hour: a cap on mail bombing. */
export const SIGNUP_MAILS_PER_HOUR = 3;

const hex = (s: string) => sha256(s).toString('hex');

export interface SignupInput {
  email: string;
  password: string;
  given_name?: string | undefined;
  family_name?: string | undefined;
  client_id: string;
  app_name: string;
  /** Where the confirmed user goes next (already checked by the caller). */
  return_to?: string | undefined;
}

/** The authorization request as a URL on payd: after the confirmation, it completes with the new session. */
export function authorizeUrl(baseUrl: string, r: AuthRequest): string {
  const q = new URLSearchParams();
  const put = (k: string, v: string | undefined) => { if (v) q.set(k, v); };
  put('client_id', r.client_id); put('redirect_uri', r.redirect_uri); put('response_type', r.response_type); put('scope', r.scope);
  put('state', r.state); put('nonce', r.nonce); put('code_challenge', r.code_challenge); put('code_challenge_method', r.code_challenge_method);
  put('account_linking_token', r.account_linking_token);
  // The user just proved the address: prompt=login would only ask again.
  put('prompt', r.prompt?.filter((p) => p === 'consent').join(' '));
  if (r.max_age !== undefined) q.set('max_age', String(r.max_age));
  return `${baseUrl}/oauth/authorize?${q}`;
}

export class SignUps {
  constructor(private readonly db: Db, private readonly identity: IdentityService, private readonly mailer: Mailer, private readonly baseUrl: string) {}

  /**
   * The same outcome whatever the address: resolves when the request is recorded and its
   * mail written. Throws only for what the caller typed (400 naming password) or the
   * sign-up throttle (429), neither of which depends on the address having an account.
   */
  async request(input: SignupInput, ip: string): Promise<void> {
    const passwordHash = await hashPassword(input.password); // the rule first: a refused password is not counted
    await this.identity.signupAllowed(ip);
    const email = input.email.trim();
    if (await signupRepo.recentCount(this.db, email) >= SIGNUP_MAILS_PER_HOUR) return;
    const existing = await idpRepo.userByEmail(this.db, email);
    const token = randomBytes(32).toString('base64url');
    await signupRepo.insert(this.db, {
      tokenHash: hex(token), email, passwordHash: existing ? '' : passwordHash, givenName: input.given_name ?? null, familyName: input.family_name ?? null,
      clientId: input.client_id, returnTo: input.return_to ?? null, noticeOnly: !!existing, ttlSeconds: SIGNUP_TTL_SECONDS,
    });
    // Expired requests (and the password hashes they hold) are of no use: cleared as new ones come.
    await signupRepo.deleteExpired(this.db);
    if (existing) {
      await this.mailer.send(existing.email, `Someone tried to create a ${input.app_name} account with your address`,
        `Someone asked to create a ${input.app_name} account for ${existing.email}, which already has one.\n\n`
        + 'If it was you, sign in with your password, or ask for a new one with "Forgot password?" on the sign-in page.\n'
        + 'If it was not you, ignore this mail: nothing was changed.\n');
      return;
    }
    await this.mailer.send(email, `Confirm your ${input.app_name} account`,
      `To create your ${input.app_name} account (${email}), open this link within 24 hours:\n`
      + `${this.baseUrl}/identity/v1/signup/confirm?token=${token}\n\n`
      + 'If it was not you, ignore this mail: no account is created.\n');
  }

  /** Whether the confirmation link is valid (unused, unexpired, a real sign-up). */
  async valid(token: string): Promise<boolean> {
    return signupRepo.isValid(this.db, hex(token));
  }

  /**
   * Uses the link once and creates the user (email verified: the link proves it); 'taken'
   * when an account was made for the address meanwhile, undefined when the link is not valid.
   */
  async confirm(token: string): Promise<{ user: UserRow; return_to: string | null } | 'taken' | undefined> {
    return this.db.transaction(async (tx) => {
      const r = await signupRepo.use(tx, hex(token));
      if (!r) return undefined;
      const user = await idpRepo.insertUser(tx, {
        id: randomUUID(), email: r.email, password_hash: r.password_hash, given_name: r.given_name, family_name: r.family_name, email_verified: true, is_admin: false,
      });
      if (!user) return 'taken';
      // The other pending requests of this address are of no use any more.
      await signupRepo.useAllOf(tx, r.email);
      return { user, return_to: r.return_to };
    });
  }
}
