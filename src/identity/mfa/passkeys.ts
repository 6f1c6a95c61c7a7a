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
import type * as SimpleWebAuthn from '@simplewebauthn/server';
import type {
  AuthenticationResponseJSON, AuthenticatorTransport, PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON, RegistrationResponseJSON,
} from '@simplewebauthn/server';
import type { Queryable } from '../../platform/db/index.ts';
import { sha256 } from '../../platform/crypto/secrets.ts';
import { type Clock, systemClock } from '../../platform/clock.ts';
import { type PasskeyRow, passkeysRepo } from './passkeys.repo.ts';

export type { PasskeyRow };

export const PASSKEYS = { challengeSeconds: 300, maxPerUser: 10, nameMax: 60 } as const;
const TRANSPORTS: readonly string[] = ['ble', 'cable', 'hybrid', 'internal', 'nfc', 'smart-card', 'usb'];
const hex = (s: string) => sha256(s).toString('hex');

/**
 * @simplewebauthn/server, loaded at the first passkey request: with its ASN.1 and CBOR
 * modules it is about 350 files, a third of a second of every process's start-up and of
 * its memory, for a feature most deployments seldom touch.
 */
let webauthnLib: Promise<typeof SimpleWebAuthn> | undefined;
const webauthn = () => (webauthnLib ??= import('@simplewebauthn/server'));

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
    return passkeysRepo.list(this.db, userId);
  }

  async has(userId: string): Promise<boolean> {
    return passkeysRepo.has(this.db, userId);
  }

  /** A new challenge (its bytes, which the library sends base64url-encoded; a string it would take as UTF-8 text). */
  private async newChallenge(userId: string, purpose: 'register' | 'authenticate', pendingCookie?: string): Promise<Uint8Array<ArrayBuffer>> {
    const bytes = new Uint8Array(32);
    crypto.getRandomValues(bytes);
    const challenge = Buffer.from(bytes).toString('base64url');
    const now = new Date(this.clock());
    await passkeysRepo.deleteExpiredChallenges(this.db, now);
    // One live challenge per enrolment of the user, or per pending sign-in: a new page voids the one before.
    if (purpose === 'register') await passkeysRepo.deleteRegisterChallenges(this.db, userId);
    else await passkeysRepo.deleteAuthenticateChallenges(this.db, hex(pendingCookie!));
    await passkeysRepo.insertChallenge(this.db, hex(challenge), userId, purpose, pendingCookie ? hex(pendingCookie) : null,
      new Date(this.clock() + PASSKEYS.challengeSeconds * 1000));
    return bytes;
  }

  /** Takes the challenge once: true when it was live and bound to this user (and pending sign-in). */
  private async takeChallenge(challenge: string, userId: string, purpose: 'register' | 'authenticate', pendingCookie?: string): Promise<boolean> {
    return passkeysRepo.takeChallenge(this.db, hex(challenge), userId, purpose, pendingCookie ? hex(pendingCookie) : null, new Date(this.clock()));
  }

  /** The options of navigator.credentials.create() for a new passkey of the user (its other passkeys excluded). */
  async registrationOptions(user: { id: string; email: string }): Promise<PublicKeyCredentialCreationOptionsJSON> {
    const existing = await passkeysRepo.credentials(this.db, user.id);
    return (await webauthn()).generateRegistrationOptions({
      rpName: this.rpName, rpID: this.rpID, userName: user.email, userDisplayName: user.email,
      userID: new Uint8Array(Buffer.from(user.id.replace(/-/g, ''), 'hex')),
      challenge: await this.newChallenge(user.id, 'register'),
      timeout: PASSKEYS.challengeSeconds * 1000,
      attestationType: 'none',
      excludeCredentials: existing.map((c) => ({ id: c.credential_id, transports: c.transports as AuthenticatorTransport[] })),
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
      const v = await (await webauthn()).verifyRegistrationResponse({ response, expectedChallenge: challenge, expectedOrigin: this.origin, expectedRPID: this.rpID, requireUserVerification: false });
      if (!v.verified) throw new Error('not verified');
      info = v.registrationInfo;
    } catch (err) {
      throw new PasskeyRefused(`credential: the passkey could not be verified (${(err as Error).message}).`);
    }
    const c = info.credential;
    const transports = (response.response.transports ?? []).filter((t) => TRANSPORTS.includes(t));
    const row = await passkeysRepo.insert(this.db, {
      id: randomUUID(), userId, credentialId: c.id, publicKey: Buffer.from(c.publicKey), counter: c.counter, transports, name, backedUp: info.credentialBackedUp,
    }, PASSKEYS.maxPerUser);
    if (!row) throw new PasskeyRefused(`credential: this passkey is already registered, or you have ${PASSKEYS.maxPerUser} passkeys (remove one first).`);
    return row;
  }

  /** The options of navigator.credentials.get() at the second step: the user's passkeys, a challenge bound to this pending sign-in. */
  async authenticationOptions(userId: string, pendingCookie: string): Promise<PublicKeyCredentialRequestOptionsJSON | undefined> {
    const creds = await passkeysRepo.credentials(this.db, userId);
    if (!creds.length) return undefined;
    return (await webauthn()).generateAuthenticationOptions({
      rpID: this.rpID,
      allowCredentials: creds.map((c) => ({ id: c.credential_id, transports: c.transports as AuthenticatorTransport[] })),
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
    const row = await passkeysRepo.credential(this.db, response.id, userId);
    if (!row) throw new PasskeyRefused('credential: that passkey is not one of this account.');
    const counter = Number(row.counter);
    let info;
    try {
      const v = await (await webauthn()).verifyAuthenticationResponse({
        response, expectedChallenge: challenge, expectedOrigin: this.origin, expectedRPID: this.rpID, requireUserVerification: false,
        credential: { id: row.credential_id, publicKey: new Uint8Array(row.public_key), counter, transports: row.transports as AuthenticatorTransport[] },
      });
      if (!v.verified) throw new Error('the signature does not match');
      info = v.authenticationInfo;
    } catch (err) {
      throw new PasskeyRefused(`credential: the passkey could not be verified (${(err as Error).message}).`);
    }
    // The counter only moves forward (both 0: an authenticator that keeps none); racing uses of one answer cannot both pass.
    if (!(await passkeysRepo.use(this.db, row.id, userId, info.newCounter, info.credentialBackedUp))) throw new PasskeyRefused('credential: the passkey\'s signature counter did not advance (a copied key?).');
    return { passkeyId: row.id, amr: info.credentialBackedUp ? 'swk' : 'hwk', userVerified: info.userVerified };
  }

  /** Removes one of the user's passkeys; false when it is not one of theirs. */
  async remove(userId: string, id: string): Promise<boolean> {
    if (!/^[0-9a-f-]{36}$/i.test(id)) return false;
    return passkeysRepo.delete(this.db, id, userId);
  }
}
