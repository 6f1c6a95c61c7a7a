// What the identity SDK's routes read and write beyond the identity service: the
// application of a client_id, one-time login tokens (tkn), where a browser may be sent
// back to, and password reset links (the mail, the check of a link, the reset). The
// routes reach the repositories only through here. Tokens are stored as SHA-256 hashes.
import { randomBytes } from 'node:crypto';
import type { Db } from '../../platform/db/index.ts';
import { sha256 } from '../../platform/crypto/secrets.ts';
import { type AppRow, idpRepo } from '../idp/idp.repo.ts';
import type { IdentityService } from '../idp/idp.service.ts';
import type { Mailer } from './mail.ts';
import { sdkRepo } from './sdk.repo.ts';
import { sdkError } from './errors.ts';

export type { AppRow };

export const LOGIN_TOKEN_TTL_SECONDS = 60;
export const RESET_TTL_SECONDS = 30 * 60;
/** Reset links per user per hour: a cap on mail bombing through "forgot password". */
export const RESETS_PER_HOUR = 3;

const hex = (s: string) => sha256(s).toString('hex');
/** An email address as the SDK's forms and payd's pages accept it. */
export const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export class SdkService {
  constructor(private readonly db: Db, private readonly identity: IdentityService, private readonly mailer: Mailer, private readonly baseUrl: string) {}

  /** The application of a client_id; an unknown or missing one is the SDK's invalid_client (400). */
  async application(clientId: unknown): Promise<AppRow> {
    const a = typeof clientId === 'string' && clientId !== '' ? await idpRepo.app(this.db, clientId) : undefined;
    if (!a) throw sdkError(400, 'invalid_client', 'Unknown or missing client_id.');
    return a;
  }

  /** A one-time token (60 s, single use, bound to the client) for /oauth/authorize. */
  async loginToken(a: AppRow, userId: string, authType: 'password' | 'signup'): Promise<{ tkn: string; mfa_required: false }> {
    const tkn = randomBytes(32).toString('base64url');
    await sdkRepo.insertLoginToken(this.db, { token_hash: hex(tkn), client_id: a.client_id, user_id: userId, auth_type: authType, ttlSeconds: LOGIN_TOKEN_TTL_SECONDS });
    return { tkn, mfa_required: false };
  }

  /** A URL the browser may be sent to after logout or a reset: an Allowed Callback URL, or on an Allowed Origin (of `a`, or of any application). */
  async allowedReturn(url: string | undefined, a?: AppRow): Promise<string | undefined> {
    if (!url || url.length > 2048 || !URL.canParse(url)) return undefined;
    const u = new URL(url);
    if (u.username || u.password || (u.protocol !== 'https:' && u.protocol !== 'http:')) return undefined;
    if (a) return a.callback_urls.includes(url) || a.allowed_origins.includes(u.origin) ? url : undefined;
    return (await idpRepo.originAllowed(this.db, u.origin)) || (await idpRepo.callbackRegistered(this.db, url)) ? url : undefined;
  }

  /** Whether an origin is an Allowed Origin of some application. */
  originAllowed(origin: string): Promise<boolean> {
    return idpRepo.originAllowed(this.db, origin);
  }

  /** The reset mail, when the address has an account that may get one (at most RESETS_PER_HOUR an hour); nothing is said either way. */
  async sendReset(a: { client_id: string; name: string }, email: string, returnTo: string | undefined): Promise<void> {
    const user = await idpRepo.userByEmail(this.db, email);
    if (user && !user.blocked && (await sdkRepo.recentResets(this.db, user.id, 3600)) < RESETS_PER_HOUR) {
      const token = randomBytes(32).toString('base64url');
      await sdkRepo.insertReset(this.db, { token_hash: hex(token), user_id: user.id, client_id: a.client_id, return_to: returnTo ?? null, ttlSeconds: RESET_TTL_SECONDS });
      const link = `${this.baseUrl}/identity/v1/password/reset?token=${token}`;
      await this.mailer.send(user.email, `Reset your ${a.name} password`,
        `Someone asked to reset the password of your ${a.name} account (${user.email}).\n\n`
        + `To choose a new password, open this link within 30 minutes:\n${link}\n\n`
        + 'If it was not you, ignore this mail: your password stays as it is.\n');
    }
  }

  /** Whether a reset link still works (unused, unexpired); looking does not use it. */
  async resetValid(token: string): Promise<boolean> {
    return (await sdkRepo.reset(this.db, hex(token), false)) !== undefined;
  }

  /** The new password of a reset link's user (the link used); undefined when the link no longer works. */
  resetPassword(token: string, password: string): Promise<{ return_to: string | null } | undefined> {
    return this.identity.resetPassword(hex(token), password);
  }
}
