// The one password rule, for every path that sets a password: the operator API, the
// Management API (create and update), the hosted sign-up, the SDK's sign-up, a reset, an
// invitation's acceptance (a reset too). 12 to 256 characters and a zxcvbn score of at
// least 2 (password-strength.ts). Applied where a password is hashed to be stored
// (passwords.ts hashPassword), so that no route can forget it; a refusal is a 400
// problem naming the field `password` with the reason (forms show the reason).
import { isProblem, PROBLEM_TYPE, problems } from '../../platform/http/problem.ts';
import { passwordScore } from '../sdk/password-strength.ts';

export const MIN_STRENGTH = 2;
export const PASSWORD_LENGTH = { min: 12, max: 256 } as const;

/** Why this password may not be chosen, or undefined when it may. */
export async function passwordRefusal(password: string): Promise<string | undefined> {
  const length = [...password.normalize('NFKC')].length;
  if (length < PASSWORD_LENGTH.min || length > PASSWORD_LENGTH.max) {
    return `Choose a password of ${PASSWORD_LENGTH.min} to ${PASSWORD_LENGTH.max} characters.`;
  }
  if ((await passwordScore(password)) < MIN_STRENGTH) return 'This password is too easy to guess: add words or characters that are less common.';
  return undefined;
}

/** Throws the 400 problem naming `password` when the password may not be chosen. */
export async function checkNewPassword(password: string): Promise<void> {
  const why = await passwordRefusal(password);
  if (why) throw problems.invalidField('password', why);
}

/** The reason of a refusal by checkNewPassword, if err is one (forms and the SDK show it their way). */
export function passwordProblem(err: unknown): string | undefined {
  if (!isProblem(err, PROBLEM_TYPE.invalidRequest)) return undefined;
  const params = err.extra.invalid_params as Array<{ name: string; reason: string }> | undefined;
  return params?.find((x) => x.name === 'password')?.reason;
}
