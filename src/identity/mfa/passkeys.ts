// Passkeys (WebAuthn) as a second factor beside TOTP (docs/identity.md "Passkeys"), checked
// by @simplewebauthn/server: the relying party is payd's public origin (config baseUrl),
// its RP ID that origin's host name. A user registers passkeys on the security page and
// uses one at the sign-in's second step. Every challenge is random (32 bytes), kept only
// as a SHA-256 hash, single use (taken by one DELETE ... RETURNING, so two racing posts
// cannot both use it) and expiring (by the app clock): an enrolment's is bound to the
// user, a second step's to the user and the pending sign-in (idp_mfa_pending). The
// signature counter must grow whenever the authenticator keeps one (a cloned key is
// refused), again by one conditional UPDATE.
import { randomUUID, webcrypto as crypto } from 'node:crypto';
import {
  type AuthenticationResponseJSON, type AuthenticatorTransport, type PublicKeyCredentialCreationOptionsJSON,
  type PublicKeyCredentialRequestOptionsJSON, type RegistrationResponseJSON,
  generateAuthenticationOptions, generateRegistrationOptions, verifyAuthenticationResponse, verifyRegistrationResponse,
} from '@simplewebauthn/server';
import type { Queryable } from '../../platform/db/index.ts';
import { sha256 } from '../../platform/crypto/secrets.ts';
import { type Clock, systemClock } from '../../platform/clock.ts';

export const PASSKEYS = { challengeSeconds: 300, maxPerUser: 10, nameMax: 60 } as const;
const TRANSPORTS: readonly string[] = ['ble', 'cable', 'hybrid', 'internal', 'nfc', 'smart-card', 'usb'];
const hex = (s: string) => sha256(s).toString('hex');

export interface PasskeyRow { id: string; name: string; created_at: Date; last_used_at: Date | null; transports: string[]; backed_up: boolean }

/** How a passkey passed (for amr, RFC 8176): hwk for a device-bound key, swk for a synced (backed-up) one. */
export interface PasskeyUse { passkeyId: string; amr: 'hwk' | 'swk'; userVerified: boolean }

/** A refusal, with the sentence to show (the form field is `credential`). */
export class PasskeyRefused extends Error {}

/** The challenge the browser signed, from the response's clientDataJSON (base64url JSON), if readable. */
function signedChallenge(clientDataJSON: unknown): string | undefined {
  if (typeof clientDataJSON !== 'string' || clientDataJSON.length > 4096) return undefined;
  try {
    const c = JSON.parse(Buffer.from(clientDataJSON, 'base64url').toString('utf8')) as { challenge?: unknown };
    return typeof c.challenge === 'string' && /^[A-Za-z0-9_-]{16,128}$/.test(c.challenge) ? c.challenge : undefined;
  } catch {
    return undefined;
  }
}

/** The posted credential (JSON of a PublicKeyCredential), or a refusal naming the field. */
export function parseCredential<T extends RegistrationResponseJSON | AuthenticationResponseJSON>(text: string | undefined): T {
  if (!text) throw new PasskeyRefused('credential: no passkey answer was sent. Use the button again (the page needs JavaScript and a browser with passkeys).');
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new PasskeyRefused('credential: not a passkey answer (not JSON).');
  }
  const o = v as { id?: unknown; rawId?: unknown; type?: unknown; response?: { clientDataJSON?: unknown } };
  if (!o || typeof o !== 'object' || typeof o.id !== 'string' || !/^[A-Za-z0-9_-]{1,1400}$/.test(o.id) || o.type !== 'public-key'
    || !o.response || typeof o.response !== 'object' || typeof o.response.clientDataJSON !== 'string') {
    throw new PasskeyRefused('credential: not a passkey answer (id, type public-key and response.clientDataJSON are needed).');
  }
  if (typeof o.rawId !== 'string') (o as { rawId: string }).rawId = o.id;
  return v as T;
}

export class Passkeys {
  readonly rpID: string;
  readonly origin: string;

  constructor(private readonly db: Queryable, baseUrl: string, private readonly rpName: string, private readonly clock: Clock = systemClock) {
    const u = new URL(baseUrl);
    this.rpID = u.hostname;
    this.origin = u.origin;
  }

  async list(userId: string): Promise<PasskeyRow[]> {
    const r = await this.db.query<PasskeyRow>(
      'SELECT id, name, created_at, last_used_at, transports, backed_up FROM idp_passkeys WHERE user_id = $1 ORDER BY created_at, id', [userId]);
    return r.rows;
  }

  async has(userId: string): Promise<boolean> {
    return (await this.db.query('SELECT 1 FROM idp_passkeys WHERE user_id = $1 LIMIT 1', [userId])).rows.length > 0;
  }

  /** A new challenge (its bytes, which the library sends base64url-encoded; a string it would take as UTF-8 text). */
  private async newChallenge(userId: string, purpose: 'register' | 'authenticate', pendingCookie?: string): Promise<Uint8Array<ArrayBuffer>> {
    const bytes = new Uint8Array(32);
    crypto.getRandomValues(bytes);
    const challenge = Buffer.from(bytes).toString('base64url');
    const now = new Date(this.clock());
    await this.db.query('DELETE FROM idp_passkey_challenges WHERE expires_at < $1', [now]);
    // One live challenge per enrolment of the user, or per pending sign-in: a new page voids the one before.
    if (purpose === 'register') await this.db.query("DELETE FROM idp_passkey_challenges WHERE user_id = $1 AND purpose = 'register'", [userId]);
    else await this.db.query("DELETE FROM idp_passkey_challenges WHERE pending_hash = $1 AND purpose = 'authenticate'", [hex(pendingCookie!)]);
    await this.db.query('INSERT INTO idp_passkey_challenges (challenge_hash, user_id, purpose, pending_hash, expires_at) VALUES ($1, $2, $3, $4, $5)',
      [hex(challenge), userId, purpose, pendingCookie ? hex(pendingCookie) : null, new Date(this.clock() + PASSKEYS.challengeSeconds * 1000)]);
    return bytes;
  }

  /** Takes the challenge once: true when it was live and bound to this user (and pending sign-in). */
  private async takeChallenge(challenge: string, userId: string, purpose: 'register' | 'authenticate', pendingCookie?: string): Promise<boolean> {
    const r = await this.db.query(
      `DELETE FROM idp_passkey_challenges WHERE challenge_hash = $1 AND user_id = $2 AND purpose = $3 AND pending_hash IS NOT DISTINCT FROM $4 AND expires_at > $5
       RETURNING user_id`, [hex(challenge), userId, purpose, pendingCookie ? hex(pendingCookie) : null, new Date(this.clock())]);
    return r.rows.length > 0;
  }

  /** The options of navigator.credentials.create() for a new passkey of the user (its other passkeys excluded). */
  async registrationOptions(user: { id: string; email: string }): Promise<PublicKeyCredentialCreationOptionsJSON> {
    const existing = await this.db.query<{ credential_id: string; transports: string[] }>('SELECT credential_id, transports FROM idp_passkeys WHERE user_id = $1', [user.id]);
    return generateRegistrationOptions({
      rpName: this.rpName, rpID: this.rpID, userName: user.email, userDisplayName: user.email,
      userID: new Uint8Array(Buffer.from(user.id.replace(/-/g, ''), 'hex')),
      challenge: await this.newChallenge(user.id, 'register'),
      timeout: PASSKEYS.challengeSeconds * 1000,
      attestationType: 'none',
      excludeCredentials: existing.rows.map((c) => ({ id: c.credential_id, transports: c.transports as AuthenticatorTransport[] })),
      authenticatorSelection: { residentKey: 'preferred', userVerification: 'preferred' },
    });
  }

  /** Verifies a registration answer and stores the passkey; PasskeyRefused when it does not pass. */
  async register(userId: string, name: string, response: RegistrationResponseJSON): Promise<PasskeyRow> {
    const challenge = signedChallenge(response.response.clientDataJSON);
    if (!challenge || !(await this.takeChallenge(challenge, userId, 'register'))) {
      throw new PasskeyRefused('credential: this passkey answer is not for a current request of yours (expired or used). Start again.');
    }
    let info;
    try {
      const v = await verifyRegistrationResponse({ response, expectedChallenge: challenge, expectedOrigin: this.origin, expectedRPID: this.rpID, requireUserVerification: false });
      if (!v.verified) throw new Error('not verified');
      info = v.registrationInfo;
    } catch (err) {
      throw new PasskeyRefused(`credential: the passkey could not be verified (${(err as Error).message}).`);
    }
    const c = info.credential;
    const transports = (response.response.transports ?? []).filter((t) => TRANSPORTS.includes(t));
    const r = await this.db.query<PasskeyRow>(
      `INSERT INTO idp_passkeys (id, user_id, credential_id, public_key, counter, transports, name, backed_up)
       SELECT $1, $2, $3, $4, $5, $6, $7, $8 WHERE (SELECT count(*) FROM idp_passkeys WHERE user_id = $2) < $9
       ON CONFLICT (credential_id) DO NOTHING
       RETURNING id, name, created_at, last_used_at, transports, backed_up`,
      [randomUUID(), userId, c.id, Buffer.from(c.publicKey), c.counter, transports, name, info.credentialBackedUp, PASSKEYS.maxPerUser]);
    if (!r.rows[0]) throw new PasskeyRefused(`credential: this passkey is already registered, or you have ${PASSKEYS.maxPerUser} passkeys (remove one first).`);
    return r.rows[0];
  }

  /** The options of navigator.credentials.get() at the second step: the user's passkeys, a challenge bound to this pending sign-in. */
  async authenticationOptions(userId: string, pendingCookie: string): Promise<PublicKeyCredentialRequestOptionsJSON | undefined> {
    const creds = await this.db.query<{ credential_id: string; transports: string[] }>('SELECT credential_id, transports FROM idp_passkeys WHERE user_id = $1', [userId]);
    if (!creds.rows.length) return undefined;
    return generateAuthenticationOptions({
      rpID: this.rpID,
      allowCredentials: creds.rows.map((c) => ({ id: c.credential_id, transports: c.transports as AuthenticatorTransport[] })),
      challenge: await this.newChallenge(userId, 'authenticate', pendingCookie),
      timeout: PASSKEYS.challengeSeconds * 1000,
      userVerification: 'preferred',
    });
  }

  /**
   * Verifies a second step's passkey answer: the challenge of this pending sign-in (once),
   * a passkey of this user, the signature, and a counter that grew. PasskeyRefused otherwise.
   */
  async authenticate(userId: string, pendingCookie: string, response: AuthenticationResponseJSON): Promise<PasskeyUse> {
    const challenge = signedChallenge(response.response.clientDataJSON);
    if (!challenge || !(await this.takeChallenge(challenge, userId, 'authenticate', pendingCookie))) {
      throw new PasskeyRefused('credential: this passkey answer is not for this sign-in (expired or used). Try the passkey again.');
    }
    const r = await this.db.query<{ id: string; credential_id: string; public_key: Buffer | Uint8Array; counter: string | number; transports: string[] }>(
      'SELECT id, credential_id, public_key, counter, transports FROM idp_passkeys WHERE credential_id = $1 AND user_id = $2', [response.id, userId]);
    const row = r.rows[0];
    if (!row) throw new PasskeyRefused('credential: that passkey is not one of this account.');
    const counter = Number(row.counter);
    let info;
    try {
      const v = await verifyAuthenticationResponse({
        response, expectedChallenge: challenge, expectedOrigin: this.origin, expectedRPID: this.rpID, requireUserVerification: false,
        credential: { id: row.credential_id, publicKey: new Uint8Array(row.public_key), counter, transports: row.transports as AuthenticatorTransport[] },
      });
      if (!v.verified) throw new Error('the signature does not match');
      info = v.authenticationInfo;
    } catch (err) {
      throw new PasskeyRefused(`credential: the passkey could not be verified (${(err as Error).message}).`);
    }
    // The counter only moves forward (both 0: an authenticator that keeps none); racing uses of one answer cannot both pass.
    const used = await this.db.query(
      `UPDATE idp_passkeys SET counter = $3, last_used_at = now(), backed_up = $4
       WHERE id = $1 AND user_id = $2 AND (counter < $3 OR (counter = 0 AND $3 = 0)) RETURNING id`,
      [row.id, userId, info.newCounter, info.credentialBackedUp]);
    if (!used.rows.length) throw new PasskeyRefused('credential: the passkey\'s signature counter did not advance (a copied key?).');
    return { passkeyId: row.id, amr: info.credentialBackedUp ? 'swk' : 'hwk', userVerified: info.userVerified };
  }

  /** Removes one of the user's passkeys; false when it is not one of theirs. */
  async remove(userId: string, id: string): Promise<boolean> {
    if (!/^[0-9a-f-]{36}$/i.test(id)) return false;
    const r = await this.db.query('DELETE FROM idp_passkeys WHERE id = $1 AND user_id = $2 RETURNING id', [id, userId]);
    return r.rows.length > 0;
  }
}
