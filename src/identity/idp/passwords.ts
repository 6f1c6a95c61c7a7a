// Password hashing: argon2id at the OWASP configuration (m=19 MiB, t=2, p=1), through
// @node-rs/argon2 (prebuilt binaries, off the main thread). Hashes are PHC strings, so
// the parameters travel with each hash and can be raised later. A password is hashed to
// be stored only here, and only once it passes the password rule (password-policy.ts).
import { hash, verify } from '@node-rs/argon2';
import { checkNewPassword } from './password-policy.ts';

const ARGON2ID = 2; // Algorithm.Argon2id (a const enum, not importable under verbatimModuleSyntax)
const OPTIONS = { algorithm: ARGON2ID, memoryCost: 19_456, timeCost: 2, parallelism: 1 };

/** The hash to store for a new password; a 400 problem naming `password` when the rule refuses it. */
export async function hashPassword(password: string): Promise<string> {
  await checkNewPassword(password);
  return hashUnchecked(password);
}

/** A hash spent for its time only (never stored as anyone's password): no rule to pass. */
export async function hashUnchecked(password: string): Promise<string> {
  return hash(password.normalize('NFKC'), OPTIONS);
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  try {
    return await verify(stored, password.normalize('NFKC'));
  } catch {
    return false;
  }
}

/** A real hash of a random password: checking an unknown email against it costs the same as a wrong password. */
export const DUMMY_HASH = await hashUnchecked(`dummy-${Math.random()}-${Date.now()}`);
