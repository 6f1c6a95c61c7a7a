// The second factor of identity users (docs/identity.md "Second factor"): a TOTP
// authenticator (RFC 6238, 30-second steps, one step of drift either way) whose secret
// is stored encrypted by the master key (the user id as associated data) and whose last
// used time step is kept, so that a code is accepted once; ten recovery codes, stored
// hashed, each usable once; and the pending sign-in: the password passed, the factor not
// yet, kept as a row (by the hash of the cookie's value) that expires after 10 minutes
// and dies after 5 wrong codes. No session exists before the factor.
import { randomBytes } from 'node:crypto';
import * as OTPAuth from 'otpauth';
import type { Queryable } from '../../platform/db/index.ts';
import { decrypt, encrypt, sha256 } from '../../platform/crypto/secrets.ts';
import { mfaRepo } from './mfa.repo.ts';

export const MFA = { pendingSeconds: 600, maxFailures: 5, recoveryCodes: 10, period: 30 } as const;
export const PENDING_COOKIE = 'payd_idp_mfa';

const hex = (s: string) => sha256(s).toString('hex');
const aad = (userId: string) => `totp:${userId}`;
/** A recovery code as typed: case, spaces and dashes do not matter. */
const normalRecovery = (code: string) => code.toLowerCase().replace(/[\s-]/g, '');

export type Verified = 'otp' | 'recovery' | undefined;
/** The second factor a sign-in passed (recorded in its login event; amr, RFC 8176: otp, or hwk/swk for a passkey). */
export type SecondFactor = 'otp' | 'recovery' | 'passkey';

export class Mfa {
  constructor(private readonly db: Queryable, private readonly masterKey: Buffer, private readonly issuer: string, private readonly now: () => number = Date.now) {}

  /** Whether the user has an active second factor (a confirmed TOTP authenticator or a passkey). */
  /** How many second factors the user has: an active authenticator app counts one, each passkey one. */
  async factorCount(userId: string): Promise<number> {
    return mfaRepo.factorCount(this.db, userId);
  }

  async hasFactor(userId: string): Promise<boolean> {
    return mfaRepo.hasFactor(this.db, userId);
  }

  /** The unused recovery codes (0: none, e.g. before the first factor). */
  async recoveryLeft(userId: string): Promise<number> {
    return mfaRepo.recoveryLeft(this.db, userId);
  }

  async status(userId: string): Promise<{ totp: 'none' | 'pending' | 'active'; recoveryLeft: number }> {
    const row = await mfaRepo.totp(this.db, userId);
    const recoveryLeft = await mfaRepo.recoveryLeft(this.db, userId);
    return { totp: !row ? 'none' : row.confirmed_at ? 'active' : 'pending', recoveryLeft };
  }

  /** A new TOTP secret for the user, not active until confirmed with a code (replaces an unconfirmed one; refused over an active one). */
  async startTotp(userId: string, label: string): Promise<{ uri: string; secret: string } | undefined> {
    const secret = new OTPAuth.Secret({ size: 20 });
    if (!(await mfaRepo.startTotp(this.db, userId, encrypt(this.masterKey, secret.base32, aad(userId))))) return undefined;
    return { uri: this.totp(secret.base32, label).toString(), secret: secret.base32 };
  }

  /** The current secret being enrolled (to show it again with an error), if any. */
  async pendingTotp(userId: string, label: string): Promise<{ uri: string; secret: string } | undefined> {
    const sealed = await mfaRepo.pendingSecret(this.db, userId);
    if (!sealed) return undefined;
    const secret = decrypt(this.masterKey, sealed, aad(userId));
    return { uri: this.totp(secret, label).toString(), secret };
  }

  /** Confirms the enrolment with a current code; then the factor is active and the code's step used. */
  async confirmTotp(userId: string, code: string): Promise<boolean> {
    return this.useTotp(userId, code, false);
  }

  /** Checks a TOTP code of the active authenticator, once: a code of a step already used is refused. */
  async verifyTotp(userId: string, code: string): Promise<boolean> {
    return this.useTotp(userId, code, true);
  }

  private async useTotp(userId: string, code: string, confirmed: boolean): Promise<boolean> {
    if (!/^\d{6}$/.test(code)) return false;
    const sealed = await mfaRepo.secret(this.db, userId, confirmed);
    if (!sealed) return false;
    const secret = decrypt(this.masterKey, sealed, aad(userId));
    const now = this.now();
    const delta = this.totp(secret, '').validate({ token: code, timestamp: now, window: 1 });
    if (delta === null) return false;
    const step = Math.floor(now / 1000 / MFA.period) + delta;
    // The step is taken only if it is later than the last one used: a replayed code (or an
    // older one of the window) is refused, also when two requests race.
    return mfaRepo.useStep(this.db, userId, step, confirmed);
  }

  /** Ten new recovery codes (the old ones void), returned once: only their hashes are kept. */
  async newRecoveryCodes(userId: string): Promise<string[]> {
    const codes = Array.from({ length: MFA.recoveryCodes }, () => {
      const s = randomBytes(8).toString('hex'); // 64 bits
      return `${s.slice(0, 4)}-${s.slice(4, 8)}-${s.slice(8, 12)}-${s.slice(12)}`;
    });
    await mfaRepo.deleteRecoveryCodes(this.db, userId);
    for (const c of codes) await mfaRepo.insertRecoveryCode(this.db, userId, hex(normalRecovery(c)));
    return codes;
  }

  /** Uses a recovery code, once. */
  async useRecoveryCode(userId: string, code: string): Promise<boolean> {
    const c = normalRecovery(code);
    if (!/^[0-9a-f]{16}$/.test(c)) return false;
    return mfaRepo.useRecoveryCode(this.db, userId, hex(c));
  }

  /** A TOTP code or a recovery code, whichever the input is. */
  async verify(userId: string, input: string): Promise<Verified> {
    const code = input.trim();
    if (/^\d{6}$/.test(code.replace(/\s/g, ''))) return (await this.verifyTotp(userId, code.replace(/\s/g, ''))) ? 'otp' : undefined;
    return (await this.useRecoveryCode(userId, code)) ? 'recovery' : undefined;
  }

  /** Removes the authenticator, and the recovery codes when no factor is left (passkeys keep them). */
  async remove(userId: string): Promise<void> {
    await mfaRepo.deleteTotp(this.db, userId);
    await this.dropRecoveryIfNoFactor(userId);
  }

  /** After a factor is removed: the recovery codes go with the last one, as they did with the authenticator alone. */
  async dropRecoveryIfNoFactor(userId: string): Promise<void> {
    if (!(await this.hasFactor(userId))) await mfaRepo.deleteRecoveryCodes(this.db, userId);
  }

  // ---- pending sign-ins ----

  /** A pending sign-in for the user: the cookie value (only its hash is kept). */
  async startPending(userId: string, how: 'password' | 'social' = 'password'): Promise<string> {
    const value = randomBytes(32).toString('base64url');
    await mfaRepo.deleteExpiredPending(this.db);
    await mfaRepo.insertPending(this.db, hex(value), userId, how, MFA.pendingSeconds);
    return value;
  }

  /** The user of a live pending sign-in and how its first step was made, if any. */
  async pendingUser(cookie: string | undefined): Promise<{ user_id: string; auth_type: 'password' | 'social' } | undefined> {
    if (!cookie) return undefined;
    return mfaRepo.pending(this.db, hex(cookie), MFA.maxFailures);
  }

  /** Counts a wrong code; true when the pending sign-in is now spent (sign in again). */
  async failPending(cookie: string): Promise<boolean> {
    const failures = await mfaRepo.failPending(this.db, hex(cookie));
    const spent = failures === undefined || failures >= MFA.maxFailures;
    if (spent) await this.endPending(cookie);
    return spent;
  }

  async endPending(cookie: string): Promise<void> {
    await mfaRepo.deletePending(this.db, hex(cookie));
  }

  private totp(secret: string, label: string) {
    return new OTPAuth.TOTP({ issuer: this.issuer, label, algorithm: 'SHA1', digits: 6, period: MFA.period, secret: OTPAuth.Secret.fromBase32(secret) });
  }
}
